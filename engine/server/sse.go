package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// sseWriter writes a Server-Sent Events response: `data: {json}\n\n` per
// event, flushed at once, as SGLang and OpenAI stream. After the first
// failed write (the client left) it writes nothing more and err says so.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
	// Faults: end without [DONE]; stop after the first token.
	dropDone, stall bool
	// truth and line record the output events' times (glmbench selftest).
	truth *Truth
	line  *TruthLine
	// buf holds the event being written and enc encodes into it; both live
	// as long as the stream, so an event costs no allocation of its own
	// (thousands of streams each write one per token).
	buf bytes.Buffer
	enc *json.Encoder
}

// Event framing. doneEvent is a variable so that writing it allocates
// nothing.
const dataPrefix = "data: "

// maxKeptEvent is the largest buffer, in bytes, a stream keeps between
// events: one far larger than a token's (an echoed prompt's logprobs) is
// let go rather than held for the rest of the stream.
const maxKeptEvent = 64 << 10

var doneEvent = []byte("data: [DONE]\n\n")

// newSSE sends the 200 and the event-stream headers right away, so a
// client sees the response begin while its request waits in the queue.
func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false) // as marshal
	s.flush()
	return s
}

// send writes one event whose data is v as JSON.
func (s *sseWriter) send(v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString(dataPrefix)
	if err := s.enc.Encode(v); err != nil {
		s.buf.Truncate(len(dataPrefix))
		s.enc.Encode((&apiError{Status: http.StatusInternalServerError, Message: "response encoding failed: " + err.Error()}).body())
	}
	s.buf.WriteByte('\n') // Encode ended the line
	s.write(s.buf.Bytes())
	if s.buf.Cap() > maxKeptEvent {
		s.buf = bytes.Buffer{} // enc holds &s.buf, which stays the same
	}
	return s.err
}

// fail sends e as an error event and ends the stream, as SGLang does for an
// error after the 200 (queue full, shutdown).
func (s *sseWriter) fail(e *apiError) {
	s.send(e.body())
	s.done()
}

// done ends the stream with `data: [DONE]`.
func (s *sseWriter) done() {
	if s.err == nil && !s.dropDone {
		s.write(doneEvent)
	}
}

func (s *sseWriter) write(b []byte) {
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	s.flush()
}

func (s *sseWriter) flush() {
	if err := s.rc.Flush(); err != nil && s.err == nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}
