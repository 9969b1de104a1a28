//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package cmdutil

import "os"

// fileIsTerminal falls back to "a character device" where no terminal ioctl
// is wired up: a console is one (so is the null device, which only loses a
// summary nobody reads).
func fileIsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
