// Package cmdtest runs one glmbench command in a test: its flags parsed
// into its Options without running it (Parse), or run over a
// cmdutil.TestFactory as the root command runs it (Execute).
//
// It imports testing, so only tests import it.
package cmdtest

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// NewCmd is the shape of a command's constructor, NewCmdX(f, runF): runF,
// when not nil, replaces the command's run function.
type NewCmd[O any] func(f *cmdutil.Factory, runF func(*O) error) *cobra.Command

// Parse executes newCmd's command with args and its run function replaced,
// and returns the Options the flags parsed into (nil when cobra refused the
// command line before the run) and the command's error. Cobra's own output
// (its error line, the usage) is discarded.
func Parse[O any](newCmd NewCmd[O], args ...string) (*O, error) {
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	var got *O
	cmd := newCmd(f, func(o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return got, err
}

// MustParse is Parse for a command line that must parse: any error fails t.
func MustParse[O any](t testing.TB, newCmd NewCmd[O], args ...string) *O {
	t.Helper()
	o, err := Parse(newCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Execute runs newCmd's command with args over f and f.Context much as
// root.Execute runs it: cobra prints neither the error nor the usage, what
// cobra does print goes to f's streams, and a failure's message is written
// once on f's stderr, as "glmbench: MESSAGE\n" (nothing for a silent exit;
// unlike root.Execute, the message is not folded to one line, so a test
// can tell when it has more than one).
// It returns the command's error; cmdutil.ExitCode maps it to the exit code.
func Execute[O any](f *cmdutil.Factory, newCmd NewCmd[O], args ...string) error {
	cmd := newCmd(f, nil)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	err := cmd.ExecuteContext(f.Context)
	if err == nil {
		return nil
	}
	if msg := cmdutil.Message(err); msg != "" {
		fmt.Fprintf(f.IO.ErrOut, "glmbench: %s\n", msg)
	}
	return err
}
