package summary_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/summary"
)

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
