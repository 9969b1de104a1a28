package cmdutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileIsTerminal asks the descriptor for its terminal attributes, as
// isatty(3) does on Linux: /dev/null, a character device, has none.
func fileIsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
