package endpoints

import (
	"sync/atomic"
	"time"
)

// arrival is when the bytes a read just returned reached this host: now,
// moved back to the kernel's receive stamp of the newest of them when the
// connection keeps one (rx, see stampRx). The stamp is on the wall clock;
// only its distance from now is used, so the result stays on the monotonic
// clock; a wall-clock step in between can move it no earlier than floor
// (the request's t0) and no later than now.
func arrival(rx *atomic.Int64, floor time.Time) time.Time {
	now := time.Now()
	if rx == nil {
		return now
	}
	ts := rx.Load()
	if ts == 0 {
		return now
	}
	if d := now.UnixNano() - ts; d > 0 {
		if t := now.Add(-time.Duration(d)); t.After(floor) {
			return t
		}
		return floor
	}
	return now
}
