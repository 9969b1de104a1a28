package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that keeps nothing and can flush, the
// cheapest client an event stream can have.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkSSESend is the server's cost of one streamed chat chunk: JSON
// encoding and framing, with nothing on the wire.
//
//	go test -run '^$' -bench SSESend -benchmem ./engine/server/
func BenchmarkSSESend(b *testing.B) {
	out := newSSE(&discardWriter{h: http.Header{}})
	text := "hello"
	finish := (*string)(nil)
	c := chatChunk{envelope: envelope{ID: "chatcmpl-0123456789abcdef0123456789abcdef", Object: "chat.completion.chunk",
		Created: 1764460000, Model: "glmbench-nano"}, Choices: []chatChunkChoice{{Delta: chatDelta{Content: &text}, FinishReason: finish}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := out.send(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamedChat is one streamed chat request of n tokens end to
// end (scheduler, decoder, SSE, HTTP client), with a scripted executor so
// that no model runs. It reports the time per generated token and the
// events per request: the scheduler hands over every token ready at a
// read, so the unpaced executor packs many tokens into one event, while
// the paced one (a sleep per step) makes each token its own event, as a
// real model does; there ns/op is mostly the sleep, and B/op and
// allocs/op over events/op are the cost of an event.
//
//	go test -run '^$' -bench StreamedChat -benchmem ./engine/server/
func BenchmarkStreamedChat(b *testing.B) {
	for _, bc := range []struct {
		name  string
		n     int
		delay time.Duration
	}{
		{"unpaced", 256, 0},
		{"paced", 64, 200 * time.Microsecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x := newScript(ids(strings.Repeat("a", bc.n)), 'a')
			x.delay = bc.delay
			e := newEnv(b, envConfig{script: x})
			body := chatBody("Say a.", map[string]any{"stream": true, "max_tokens": bc.n, "temperature": 0, "ignore_eos": true,
				"chat_template_kwargs": map[string]any{"enable_thinking": false}})
			b.ReportAllocs()
			events := 0
			for b.Loop() {
				evs := e.stream("/v1/chat/completions", body)
				if !strings.Contains(evs[len(evs)-2], `"finish_reason":"length"`) {
					b.Fatalf("stream ended with %s, want finish_reason length", evs[len(evs)-2])
				}
				events += len(evs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.n), "ns/token")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
