// Package rxstamp keeps, per TCP connection, the kernel's receive time of the
// newest bytes read from it (SO_TIMESTAMPNS through recvmsg), so that a
// reader can date bytes by when they reached the host rather than by when a
// goroutine got a core to read them. Linux only; elsewhere connections are
// left as they are and times fall back to time.Now.
package rxstamp

import (
	"net"
	"sync/atomic"
	"time"
)

// Arrival is when the bytes a read just returned reached this host: now,
// moved back to the kernel's receive stamp of the newest of them when the
// connection keeps one (rx, see Last). The stamp is on the wall clock;
// only its distance from now is used, so the result stays on the monotonic
// clock; a wall-clock step in between can move it no earlier than floor
// (the request's t0) and no later than now.
func Arrival(rx *atomic.Int64, floor time.Time) time.Time {
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

// Listener returns ln with every connection it accepts wrapped by Wrap.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
