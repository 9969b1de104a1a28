//go:build !linux

package endpoints

import (
	"net"
	"sync/atomic"
)

// stampRx returns c: kernel receive stamps are read on Linux only.
func stampRx(c net.Conn) net.Conn { return c }

// lastRx is nil: see stampRx.
func lastRx(net.Conn) *atomic.Int64 { return nil }
