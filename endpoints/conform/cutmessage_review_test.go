package conform

import (
	"io"
	"net/http"
	"net/http/httptest"
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

// The truth: a refused stream's body is redacted as it is read, before the
// readLimit cut, so the body kept holds no start of the key even where the
// key straddles the cut (it used to be read raw and cut, leaving the key's
// first bytes for every later use to guard against).
func TestARefusedStreamsBodyIsRedactedBeforeItsCut(t *testing.T) {
	t.Parallel()
	// "Bearer " is 7 bytes: the key itself starts 10 bytes before the cut.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, pad(readLimit-17)+r.Header.Get("Authorization")+" and more")
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL+"/v1", "m")
	cfg.Endpoint = straddleEndpoint(t, srv.URL+"/v1")
	s, done := newSuite(cfg)
	defer done()
	st := s.stream(t.Context(), map[string]any{"model": "m", "stream": true, "max_tokens": 1}, nil)
	if len(st.body) == 0 || strings.Contains(string(st.body), straddleKey[:7]) {
		t.Fatalf("kept body (%d bytes) ends %q: want it read, with no start of the key", len(st.body), st.body[max(0, len(st.body)-40):])
	}
}
