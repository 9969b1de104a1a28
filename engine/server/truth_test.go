package server

import (
	"context"
	"io"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestTheTruthDatesARequestByWhenItsBytesArrived(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{opts: Options{Truth: NewTruth(io.Discard)}})
	spec := &genSpec{stream: true, prompt: e.tok.Encode("0badcafe-000042 hi")}
	start := time.Now()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	// No receive stamps: the handler's start.
	if l := e.srv.truthFor(r, spec, start); l == nil || l.Key != "0badcafe-000042" || l.Arrival != e.srv.opts.Truth.at(start) {
		t.Fatalf("without stamps: %+v, want arrival at the handler's start", l)
	}
	// The connection's bytes arrived 30 ms before the handler began.
	var rx atomic.Int64
	rx.Store(start.Add(-30 * time.Millisecond).UnixNano())
	r = r.WithContext(context.WithValue(r.Context(), rxKey{}, &rx))
	l := e.srv.truthFor(r, spec, start)
	if d := time.Duration(e.srv.opts.Truth.at(start) - l.Arrival); d < 29*time.Millisecond || d > 31*time.Millisecond {
		t.Errorf("arrival %v before the handler's start, want 30 ms", d)
	}
}
