//go:build !linux

package rxstamp

import (
	"net"
	"sync/atomic"
)

// Wrap returns c: kernel receive stamps are read on Linux only.
func Wrap(c net.Conn) net.Conn { return c }

// Last is nil: see Wrap.
func Last(net.Conn) *atomic.Int64 { return nil }
