package conform

import (
	"strings"
	"testing"
)

// A refused stream's body is read to readLimit bytes, cut there before any
// redaction. A server whose long error body ends in a message quoting the
// key, the key across that cut, leaves only the key's first bytes in what
// was read: statusLine, which reads the message out of a cut body, must not
// show them (no later redaction knows them for a secret).
func TestAMessageCutInsideTheKeyAtTheReadLimitShowsNoPrefix(t *testing.T) {
	t.Parallel()
	ep := straddleEndpoint(t, "http://127.0.0.1:1/v1")
	head := `{"detail":"` + pad(readLimit-60) + `","error":{"message":"the key `
	// The key starts 10 bytes before the cut.
	body := head + pad(readLimit-10-len(head)) + straddleKey + `"}}`
	cut := []byte(body[:readLimit])
	if !strings.Contains(string(cut), straddleKey[:7]) || strings.Contains(string(cut), straddleKey) {
		t.Fatalf("the cut does not fall inside the key: %q", cut[len(cut)-40:])
	}
	got := statusLine(redactor(ep.Redact), 401, "", cut)
	if leaks(got) {
		t.Errorf("statusLine = %q: holds the key's prefix", got)
	}
	// What is quoted is the server's text, from its start.
	if !strings.HasPrefix(got, `HTTP 401: {"detail":"xxx`) {
		t.Errorf("statusLine = %q: not the server's text", got)
	}
}
