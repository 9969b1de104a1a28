package endpoints

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A hostile server's "model" is kept as a name a terminal and report.md
// can show: at most maxModelName bytes of it and a "…" where cut, valid
// UTF-8, no control character (a terminal escape's ESC, a newline),
// escapes decoded first; a raw control or non-UTF-8 byte makes the event
// malformed JSON, read as no chunk at all. The truths: each input's kept
// name, computed by hand.
func TestAHostileModelNameIsKeptShowable(t *testing.T) {
	huge := strings.Repeat("m", 1<<20)
	ep := &Endpoint{Model: "glm-5"}
	for _, tc := range []struct{ name, chunk, want string }{
		{"the one asked", `{"model":"glm-5"}`, "glm-5"},
		{"escaped ESC and newline", `{"model":"a\u001b[2J\nb"}`, "a?[2J b"},
		{"raw ESC", "{\"model\":\"a\x1b[31mb\"}", ""},
		{"not UTF-8", "{\"model\":\"a\xff\xfeb\"}", ""},
		{"a lone surrogate", `{"model":"a\ud800b"}`, "a\uFFFDb"},
		{"huge", `{"model":"` + huge + `"}`, strings.Repeat("m", maxModelName) + "…"},
	} {
		var c Chunk
		if err := ParseChunk([]byte(tc.chunk), &c); err != nil || tc.want == "" {
			if (err == nil) != (tc.want != "") {
				t.Errorf("%s: parsed with error %v, want one: %v", tc.name, err, tc.want == "")
			}
			continue
		}
		got := chunkModel(&c, ep)
		if len(got) > maxModelName+len("…") || !utf8.ValidString(got) || strings.IndexFunc(got, unicode.IsControl) >= 0 {
			t.Errorf("%s: kept %d bytes %q: not a showable name", tc.name, len(got), got[:min(len(got), 40)])
		}
		if got != tc.want {
			t.Errorf("%s: kept %q, want %q", tc.name, got[:min(len(got), 40)], tc.want[:min(len(tc.want), 40)])
		}
	}
}
