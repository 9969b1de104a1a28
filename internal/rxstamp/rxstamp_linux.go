//go:build linux

package rxstamp

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxConn is a TCP connection that asks the kernel to stamp each received
// segment (SO_TIMESTAMPNS) and keeps the stamp of the last one its reads
// returned: when the bytes reached this host, not when a goroutine of this
// process got a core to read them. TLS runs above it, so the stamps are
// those of the ciphertext's arrival.
type rxConn struct {
	*net.TCPConn
	rc syscall.RawConn
	// last is the kernel's receive time (Unix nanos, CLOCK_REALTIME) of the
	// newest segment a read returned; 0 before any.
	last atomic.Int64

	// One read's arguments and results: Read is never called concurrently
	// (net.Conn), so the read function reuses them instead of allocating a
	// closure per call.
	p      []byte
	n      int
	err    error
	oob    [64]byte
	msg    unix.Msghdr
	iov    unix.Iovec
	readFn func(fd uintptr) bool
}

// Wrap returns c reading with kernel receive stamps, or c itself when
// it is no TCP connection or the kernel refuses the option.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	r := &rxConn{TCPConn: tc, rc: rc}
	r.readFn = r.read
	return r
}

// Read reads as net.Conn does, through recvmsg, noting the receive stamp.
func (r *rxConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err = p, 0, nil
	if err := r.rc.Read(r.readFn); err != nil {
		return 0, err // a deadline or a closed connection, as net.Conn says it
	}
	n, err := r.n, r.err
	r.p = nil
	return n, err
}

// read is one recvmsg attempt; false asks the poller to wait for data. It
// calls recvmsg itself, with the message header kept in r: unix.Recvmsg
// allocates on every call, and this runs once per event.
func (r *rxConn) read(fd uintptr) bool {
	r.iov.Base = &r.p[0]
	r.iov.SetLen(len(r.p))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	defer func() { r.iov.Base = nil }() // keep no hold on the caller's buffer
	for {
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return false
		case errno != 0:
			r.err = &net.OpError{Op: "read", Net: "tcp", Source: r.LocalAddr(), Addr: r.RemoteAddr(), Err: os.NewSyscallError("recvmsg", errno)}
		case n == 0:
			r.err = io.EOF
		default:
			r.n = int(n)
			if ts := rxStamp(r.oob[:r.msg.Controllen]); ts != 0 {
				r.last.Store(ts)
			}
		}
		return true
	}
}

// rxStamp finds SCM_TIMESTAMPNS in a control message buffer and returns it
// in Unix nanoseconds, 0 when absent. It parses by hand: the standard
// parser allocates, and this runs once per read.
func rxStamp(oob []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hdr+16 {
			d := oob[unix.CmsgSpace(0):]
			sec := int64(binary.NativeEndian.Uint64(d[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(d[8:16]))
			return sec*1e9 + nsec
		}
		oob = oob[min(unix.CmsgSpace(l-hdr), len(oob)):]
	}
	return 0
}

// Last is where c keeps the kernel's receive time (Unix nanos) of the
// newest bytes it delivered, nil when it keeps none; c may be TLS over an
// rxConn.
func Last(c net.Conn) *atomic.Int64 {
	if t, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = t.NetConn()
	}
	if r, ok := c.(*rxConn); ok {
		return &r.last
	}
	return nil
}
