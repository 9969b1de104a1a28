package rxstamp

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// An event read late is stamped when its bytes arrived, not when it was read.
func TestReadsAreStampedWhenTheBytesArrivedNotWhenRead(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("kernel receive stamps are read on Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan time.Time, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		time.Sleep(20 * time.Millisecond)
		sent <- time.Now()
		c.Write([]byte("data: one\n\n"))
		time.Sleep(200 * time.Millisecond)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Wrap(raw)
	defer c.Close()
	rx := Last(c)
	if rx == nil {
		t.Fatal("a dialled connection keeps no receive stamps")
	}
	wrote := <-sent
	time.Sleep(60 * time.Millisecond) // the bytes wait in the socket
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	readAt := time.Now()
	if err != nil || string(buf[:n]) != "data: one\n\n" {
		t.Fatalf("read %q %v", buf[:n], err)
	}
	at, ok := Received(rx)
	if d := at.Sub(wrote); !ok || d < 0 || d > 10*time.Millisecond {
		t.Errorf("stamped %v after the write (read %v after it); want within 10 ms of the write", d, readAt.Sub(wrote))
	}
	// A deadline and the end of the stream read as net.Conn says them.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	if _, err := c.Read(buf); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

func TestReceivedIsTheStampOnTheMonotonicClock(t *testing.T) {
	t.Parallel()
	if _, ok := Received(nil); ok {
		t.Error("no connection stamps, yet ok")
	}
	var rx atomic.Int64
	if _, ok := Received(&rx); ok {
		t.Error("nothing read yet, yet ok")
	}
	rx.Store(time.Now().Add(-30 * time.Millisecond).UnixNano())
	if got, ok := Received(&rx); !ok || time.Since(got) < 29*time.Millisecond || time.Since(got) > time.Second {
		t.Errorf("a stamp 30 ms ago gives %v ago (%v)", time.Since(got), ok)
	}
	rx.Store(time.Now().Add(time.Hour).UnixNano()) // a wall-clock step: after now
	if got, ok := Received(&rx); !ok || time.Since(got) < 0 || time.Since(got) > time.Second {
		t.Errorf("a stamp after now gives %v ago", time.Since(got))
	}
}
