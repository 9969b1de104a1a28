package sched

import (
	"context"
	"sync"
)

// Stream carries one request's events from the scheduler to its HTTP
// handler. The scheduler never waits on it: events queue without bound
// (at most one per generated token), so a slow client slows only itself.
type Stream struct {
	mu      sync.Mutex
	events  []Event
	closed  bool
	notify  chan struct{}
	aborted chan struct{}
	abort   sync.Once
}

func newStream() *Stream {
	return &Stream{notify: make(chan struct{}, 1), aborted: make(chan struct{})}
}

// push queues an event; the last one carries Finish.
func (s *Stream) push(ev Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.events = append(s.events, ev)
	if ev.Finish != nil {
		s.closed = true
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Next returns the events queued since the last call, waiting until there
// is one. It returns nil with ctx's error when ctx ends first. After the
// event with Finish, it returns nothing more.
func (s *Stream) Next(ctx context.Context) ([]Event, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			evs := s.events
			s.events = nil
			s.mu.Unlock()
			return evs, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, errStreamDone
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Abort asks the scheduler to stop the request and free its KV cache (a
// client went away, or a stop string matched). It is safe to call more than
// once and after the end.
func (s *Stream) Abort() { s.abort.Do(func() { close(s.aborted) }) }

func (s *Stream) isAborted() bool { return isClosed(s.aborted) }
