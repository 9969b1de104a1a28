package summary_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// A record keeps endpoints.BodyLimit bytes of an error body, redacted
// before the cut: its message is read to where the cut fell. A longer body
// cut short was cut elsewhere (conform's 4 KiB read of a refused stream,
// before redaction), so its message is not read to the cut, which could
// fall inside a key: the text is given from its start instead.
func TestOnlyARecordsCutBodyIsReadToTheCut(t *testing.T) {
	t.Parallel()
	msg := "the key " + strings.Repeat("y", 400)
	body := `{"error":{"message":"` + msg + `"}}`
	record := body[:endpoints.BodyLimit]
	want := msg[:endpoints.BodyLimit-len(`{"error":{"message":"`)]
	if got := summary.ErrorMessage([]byte(record)); got != want {
		t.Errorf("ErrorMessage of a record's %d bytes = %q, want %q", len(record), got, want)
	}
	longer := `{"detail":"` + strings.Repeat("x", 4000) + `","error":{"message":"` + msg
	if got := summary.ErrorMessage([]byte(longer)); got != longer {
		t.Errorf("ErrorMessage of a %d-byte cut body = %q…, want its text", len(longer), got[:min(len(got), 40)])
	}
}

// A cut body whose other strings hold anything (the word "message" in
// quotes, escapes, a key named like it) still gives either its text or a
// prefix of its error's own message: no other string is read for it.
func FuzzACutBodyGivesItsTextOrAPrefixOfItsMessage(f *testing.F) {
	f.Add(`"message": "not this"`, "the message", 60)
	f.Add(`\"message\"`, "x", 30)
	f.Add("message", "Over \"loaded\"", 45)
	f.Fuzz(func(t *testing.T, other, message string, cut int) {
		qo, _ := json.Marshal(other)
		qm, _ := json.Marshal(message)
		var sent string
		json.Unmarshal(qm, &sent)
		body := []byte(`{"type":"error","error":{"type":` + string(qo) + `,"message":` + string(qm) + `}}`)
		kept := body[:min(max(cut, 0), len(body))]
		msg := summary.ErrorMessage(kept)
		if msg != text.OneLine(strings.ToValidUTF8(string(kept), "?")) && !strings.HasPrefix(text.OneLine(sent), msg) {
			t.Fatalf("ErrorMessage(%q) = %q: neither the text nor a prefix of %q", kept, msg, sent)
		}
	})
}

// An error_kinds key quotes the server's message into the report's JSON
// and markdown: a control character in it (an ESC, JSON-escaped \u001b,
// which decoding the message turns into the byte) is shown as "?", in a
// whole body and in a record's cut one.
func TestAnErrorKindHoldsNoControlCharacter(t *testing.T) {
	t.Parallel()
	whole := `{"error":{"message":"bad \u001b[2J model"}}`
	for _, body := range []string{whole, whole[:len(whole)-3]} {
		rec := &schema.Record{Class: schema.HTTP4xx, Status: 400, Body: body}
		got := summary.ErrorKind(rec)
		if got != "HTTP 400: bad ?[2J model" {
			t.Errorf("ErrorKind of %s = %q, want %q", body, got, "HTTP 400: bad ?[2J model")
		}
		if strings.ContainsFunc(got, unicode.IsControl) {
			t.Errorf("ErrorKind = %q: a control character", got)
		}
	}
}

// Google's errors are an array of one error object ([{"error": {...}}]);
// an array nested in an array is no such body. A server's body of arrays
// nested thousands deep (20 KB: go-openai reads a /models answer whole)
// is read once, not again at each level: the allocations do not grow
// with the depth (before: some per level, a parse of the rest each time).
func TestADeepNestedArrayBodyIsReadOnce(t *testing.T) {
	nested := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + `{"error":{"message":"deep"}}` + strings.Repeat("]", n))
	}
	if got, want := summary.ErrorMessage(nested(1)), "deep"; got != want {
		t.Errorf("ErrorMessage of Google's shape = %q, want %q", got, want)
	}
	if got, want := summary.ErrorMessage(nested(2)), string(nested(2)); got != want {
		t.Errorf("ErrorMessage of an array in an array = %q, want its text", got)
	}
	shallow := testing.AllocsPerRun(3, func() { summary.ErrorMessage(nested(10)) })
	deep := testing.AllocsPerRun(3, func() { summary.ErrorMessage(nested(2000)) })
	if deep > 2*shallow+20 {
		t.Errorf("ErrorMessage allocates %.0f times at depth 2,000, %.0f at depth 10: it reads each level again", deep, shallow)
	}
}
