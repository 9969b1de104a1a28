// Package badinput is glmbench's one error for bad usage or bad input: a
// flag, a file or an endpoint's answer that the user must fix, said in one
// line before any load is sent. Commands exit 2 on it (DESIGN.md); every
// package that finds bad input returns it, and cmd/cmdutil tells it with
// errors.As.
//
// It is a leaf: it imports no other glmbench package, so the client, the
// load runner, the report readers and the commands can all return it.
package badinput

import (
	"errors"
	"fmt"
)

// Error is bad usage or input. Its text is exactly what the user reads.
type Error struct{ err error }

func (e *Error) Error() string { return e.err.Error() }

// Unwrap gives what Errorf wrapped (%w) or Wrap marked, so errors.As still
// finds, say, a *bench.ProbeError inside.
func (e *Error) Unwrap() error { return e.err }

// Errorf is bad input saying fmt.Errorf(format, args...), %w included.
func Errorf(format string, args ...any) error {
	return &Error{err: fmt.Errorf(format, args...)}
}

// Wrap marks err as bad input, keeping its text; a nil err stays nil.
func Wrap(err error) error {
	if err == nil || Is(err) {
		return err
	}
	return &Error{err: err}
}

// Is reports whether err is, or wraps, bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
