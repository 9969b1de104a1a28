package cmdutil

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// StartProgress shows work in flight on stderr: on a terminal a live line
// redrawn five times a second, else a plain line every `every` (none when
// every is 0). line makes the text at each tick (bar: a terminal, where a
// progress bar fits). The returned func stops it and clears the live line.
func StartProgress(io *IOStreams, every time.Duration, line func(now time.Time, bar bool) string) (stop func()) {
	tick := every
	if io.ErrTTY {
		tick = 200 * time.Millisecond
	}
	if tick <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				if io.ErrTTY {
					fmt.Fprint(io.ErrOut, "\r\x1b[K")
				}
				return
			case now := <-t.C:
				if io.ErrTTY {
					fmt.Fprintf(io.ErrOut, "\r\x1b[K%s", line(now, true))
				} else {
					fmt.Fprintln(io.ErrOut, line(now, false))
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// Bar is a 24-character progress bar of done out of total, with a trailing space.
func Bar(done, total int64) string {
	const width = 24
	fill := 0
	if total > 0 {
		fill = int(min(done, total) * width / total)
	}
	return "[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "] "
}
