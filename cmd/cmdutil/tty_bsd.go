//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package cmdutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileIsTerminal asks the descriptor for its terminal attributes, as
// isatty(3) does on the BSDs and macOS.
func fileIsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	return err == nil
}
