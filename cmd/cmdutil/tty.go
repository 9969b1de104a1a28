package cmdutil

import (
	"io"
	"os"
)

// OutTTY reports whether s.Out is a terminal: run prints a compact summary
// there instead of report.md's wide tables.
func (s *IOStreams) OutTTY() bool { return IsTerminal(s.Out) }

// IsTerminal reports whether w is a terminal: a writer made by TTY, or an
// *os.File whose descriptor answers a terminal's ioctl (where the system
// has one; elsewhere, a character device). Any other writer is not.
func IsTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case ttyWriter:
		return true
	case *os.File:
		return fileIsTerminal(w)
	}
	return false
}

// TTY returns w as a terminal for IsTerminal, so a test can stand a buffer
// in for one (f.IO.Out = cmdutil.TTY(out)); writes go to w unchanged.
func TTY(w io.Writer) io.Writer { return ttyWriter{w} }

type ttyWriter struct{ io.Writer }
