package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The writer reuses one buffer for every event (and lets go of one grown
// past maxKeptEvent), so each event must be exactly its own bytes: none of
// the one before, none of a failed encode.
func TestSSEWriterFramesEveryEventAlone(t *testing.T) {
	rec := httptest.NewRecorder()
	out := newSSE(rec)
	out.send(map[string]string{"text": "a longer first event <b>&</b>"})
	out.send(map[string]string{"text": "b"})
	out.send(make(chan int)) // JSON cannot encode it: the event is an error
	big := strings.Repeat("x", 2*maxKeptEvent)
	out.send(map[string]string{"text": big})
	out.send(map[string]string{"text": "c"})
	out.done()
	want := `data: {"text":"a longer first event <b>&</b>"}` + "\n\n" +
		`data: {"text":"b"}` + "\n\n" +
		`data: {"error":{"object":"error","message":"response encoding failed: json: unsupported type: chan int","type":"InternalServerError","param":null,"code":500}}` + "\n\n" +
		`data: {"text":"` + big + `"}` + "\n\n" +
		`data: {"text":"c"}` + "\n\n" +
		"data: [DONE]\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream\n%.2000s\nwant\n%.2000s", got, want)
	}
}
