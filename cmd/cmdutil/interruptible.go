package cmdutil

import (
	"context"
	"errors"
	"fmt"
)

// Interruptible returns read's result, or, should ctx end first, an error
// saying so: one that exits 130 naming what was being read (what: "--endpoints
// FILE") when its cause is ErrInterrupted (the first Ctrl-C), else ctx's
// cause. read reads an input file, which may be a FIFO or a pipe (mkfifo, a
// shell's <(…)): open(2) of a FIFO waits for a writer, and read(2) for its
// data or its close, and no context reaches either, so the first Ctrl-C
// would otherwise only be noticed once something wrote. read is left to end
// on its own goroutine; the command is about to exit.
func Interruptible[T any](ctx context.Context, what string, read func() (T, error)) (T, error) {
	if ctx == nil || ctx.Done() == nil {
		return read()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		if cause := context.Cause(ctx); !errors.Is(cause, ErrInterrupted) {
			return zero, cause
		}
		return zero, &ExitError{Code: ExitInterrupted,
			Err: fmt.Errorf("interrupted while waiting to read %s (a FIFO or pipe nothing has written to yet?): nothing was sent", what)}
	}
}
