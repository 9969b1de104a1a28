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

// Received is when the newest bytes a connection delivered reached this
// host (rx, see Last), on the monotonic clock; ok is false when it keeps
// no stamp (not Linux, or nothing read yet). The stamp is on the wall clock;
// only its distance from now is used, so a wall-clock step between the two
// cannot move the result past now, and the caller bounds it below.
func Received(rx *atomic.Int64) (t time.Time, ok bool) {
	if rx == nil {
		return time.Time{}, false
	}
	ts := rx.Load()
	if ts == 0 {
		return time.Time{}, false
	}
	now := time.Now()
	if d := now.UnixNano() - ts; d > 0 {
		return now.Add(-time.Duration(d)), true
	}
	return now, true
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
