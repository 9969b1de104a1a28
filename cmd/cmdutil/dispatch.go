package cmdutil

import (
	"context"

	"github.com/spf13/cobra"
)

// Dispatch is how a command's RunE ends, once the flags are in o: runF
// with o where a test replaced the run function (the runF of NewCmdX(f,
// runF)), else run with the command's context.
func Dispatch[O any](cmd *cobra.Command, o *O, runF func(*O) error, run func(context.Context, *O) error) error {
	if runF != nil {
		return runF(o)
	}
	return run(cmd.Context(), o)
}
