package cmdutil

import (
	"os"

	"github.com/mattn/go-isatty"
)

// fileIsTerminal reports whether f is a terminal, by go-isatty (termios on
// the unixes, the console mode on Windows, Cygwin's pty pipes): /dev/null,
// a character device, is none.
func fileIsTerminal(f *os.File) bool {
	// Through SyscallConn, not f.Fd(): Fd puts the descriptor into
	// blocking mode, which a pipe shares with the processes around us.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	if err := rc.Control(func(fd uintptr) {
		tty = isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
	}); err != nil {
		return false
	}
	return tty
}
