//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package cmdutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileIsTerminal asks the descriptor for its terminal attributes, as
// isatty(3) does: /dev/null, a character device, has none.
func fileIsTerminal(f *os.File) bool {
	// Through SyscallConn, not f.Fd(): Fd puts the descriptor into
	// blocking mode, which a pipe shares with the processes around us.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	if err := rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), getTermios)
		tty = err == nil
	}); err != nil {
		return false
	}
	return tty
}
