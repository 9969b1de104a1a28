// Package version is `glmbench version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// NewCmdVersion prints the tool's version.
func NewCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print glmbench's version",
		Args:  cmdutil.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "glmbench %s\n", f.Version)
			return err
		},
	}
}
