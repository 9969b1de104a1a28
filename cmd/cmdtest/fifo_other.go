//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package cmdtest

import "testing"

// FIFO skips the test: this system has no syscall.Mkfifo.
func FIFO(t testing.TB, name string) string {
	t.Helper()
	t.Skip("no syscall.Mkfifo on this system")
	return ""
}

func interrupt(t testing.TB) { t.Skip("no SIGINT to self on this system") }
