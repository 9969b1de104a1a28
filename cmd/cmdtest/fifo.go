package cmdtest

import (
	"context"
	"os"
	"os/signal"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// SignalContext is a context cancelled with cause cmdutil.ErrInterrupted on
// the process's first SIGINT, as root.Main's is: what Interrupt ends. The
// signal is caught only until the test ends. A test that sends one must not
// be parallel: every such context in the process would see it.
func SignalContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	stop := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel(cmdutil.ErrInterrupted)
		case <-stop:
		}
	}()
	t.Cleanup(func() {
		signal.Stop(sig)
		close(stop)
		cancel(nil)
	})
	return ctx
}

// InterruptAfter sends SIGINT to the test's own process after d, as a
// Ctrl-C would (FIFO's build only: elsewhere the test is skipped).
func InterruptAfter(t testing.TB, d time.Duration) {
	t.Helper()
	time.AfterFunc(d, func() { interrupt(t) })
}
