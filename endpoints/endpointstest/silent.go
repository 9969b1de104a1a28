package endpointstest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Silent listens on loopback and returns its address: it accepts every
// connection and never writes a byte (not an HTTP answer, not a TLS
// handshake), reading and dropping what comes, as a hung server or a
// firewall that swallows packets after the connect does. Its listener and
// connections close as the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	return ln.Addr().String()
}
