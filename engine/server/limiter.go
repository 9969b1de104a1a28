package server

import (
	"math"
	"sync"
	"time"
)

// limiter is the optional gateway in front of the POST endpoints, as a
// provider's API gateway would be: a cap on requests in flight and a token
// bucket of requests per minute. Both refuse with 429 and Retry-After (the
// engine's own queue overflow is a 503, as SGLang's), so a client can be
// tested against either on purpose.
type limiter struct {
	mu sync.Mutex
	// concurrency caps requests in flight (0: no cap).
	concurrency int
	inflight    int
	// rpm refills the bucket at rpm/60 tokens a second up to rpm (0: off).
	rpm    int
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(concurrency, rpm int, now func() time.Time) *limiter {
	return &limiter{concurrency: max(concurrency, 0), rpm: max(rpm, 0), tokens: float64(max(rpm, 0)), last: now(), now: now}
}

// acquire admits a request or says after how many seconds to retry. The
// caller calls release when an admitted request ends.
func (l *limiter) acquire() (release func(), retryAfter int, ok bool) {
	if l.concurrency == 0 && l.rpm == 0 {
		return func() {}, 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.concurrency > 0 && l.inflight >= l.concurrency {
		return nil, 1, false // a slot frees when any request ends; 1 s is the smallest Retry-After
	}
	if l.rpm > 0 {
		now := l.now()
		rate := float64(l.rpm) / 60 // tokens per second
		if dt := now.Sub(l.last).Seconds(); dt > 0 {
			l.tokens = math.Min(float64(l.rpm), l.tokens+dt*rate)
		}
		l.last = now
		if l.tokens < 1 {
			return nil, max(1, int(math.Ceil((1-l.tokens)/rate))), false
		}
		l.tokens--
	}
	if l.concurrency > 0 {
		l.inflight++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if l.concurrency > 0 {
				l.mu.Lock()
				l.inflight--
				l.mu.Unlock()
			}
		})
	}, 0, true
}
