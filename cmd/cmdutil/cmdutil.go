// Package cmdutil holds what every glmbench command shares: the injected
// I/O and process state (Factory), exit codes and the errors that carry them.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/syncbuf"
)

// Exit codes, as DESIGN.md fixes them. Precedence: 2 > 1 > 99.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitBadInput    = 2
	ExitThresholds  = 99
	ExitInterrupted = 130
)

// ErrInterrupted is the cause of the Factory's context after SIGINT or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// IOStreams are the command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY is true when ErrOut is a terminal: progress is drawn live then.
	ErrTTY bool
}

// Factory carries the process state commands use, so tests can replace it.
type Factory struct {
	IO      *IOStreams
	Getenv  func(string) string
	Now     func() time.Time
	Version string
	// Context is cancelled with cause ErrInterrupted on Ctrl-C.
	Context context.Context
}

// System returns a Factory over the real process.
func System(ctx context.Context, version string) *Factory {
	return &Factory{
		IO:      &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: IsTerminal(os.Stderr)},
		Getenv:  os.Getenv,
		Now:     time.Now,
		Version: version,
		Context: ctx,
	}
}

// ExitError is an error that says which exit code it means. A nil Err with a
// code exits silently (the command already said what happened).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// NoArgs is cobra.NoArgs, its text and all, returning bad usage (exit 2):
// the validator of every command that takes no arguments.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return badinput.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// Silent returns an error that exits with code without printing anything.
func Silent(code int) error { return &ExitError{Code: code} }

// ExitCode maps an error to the process exit code: an ExitError's own code,
// 2 for bad input (badinput.Error), 130 for an interruption, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if badinput.Is(err) {
		return ExitBadInput
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted
	}
	return ExitFailed
}

// Message is what to print for err: its text, or "" for a silent exit.
func Message(err error) string {
	var ee *ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return ""
	}
	return err.Error()
}

// TestFactory returns a Factory over buffers, for tests: out and errOut
// collect what the command prints; getenv answers from env.
func TestFactory(ctx context.Context, env map[string]string) (f *Factory, out, errOut *SyncBuffer) {
	out, errOut = &SyncBuffer{}, &SyncBuffer{}
	return &Factory{
		IO:      &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		Getenv:  func(k string) string { return env[k] },
		Now:     time.Now,
		Version: "test",
		Context: ctx,
	}, out, errOut
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (progress lines
// come from their own goroutine).
type SyncBuffer = syncbuf.Buffer
