package server

import (
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
}

// newSSE sends the 200 and the event-stream headers right away, so a
// client sees the response begin while its request waits in the queue.
func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// send writes one event whose data is v as JSON.
func (s *sseWriter) send(v any) error {
	if s.err != nil {
		return s.err
	}
	b, err := marshal(v)
	if err != nil {
		b, _ = marshal((&apiError{Status: http.StatusInternalServerError, Message: "response encoding failed: " + err.Error()}).body())
	}
	s.write(append(append([]byte("data: "), b...), '\n')) // marshal ended the line
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
		s.write([]byte("data: [DONE]\n\n"))
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
