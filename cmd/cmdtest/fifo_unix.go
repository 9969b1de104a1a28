//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package cmdtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FIFO makes a named pipe in a test folder that nothing writes to, and
// returns its path: a command that opens it for reading waits in open(2)
// until a writer comes. When the test ends a writer opens and closes it,
// so that a reader still waiting reads an empty file and ends. (Only where
// syscall.Mkfifo is; elsewhere the test is skipped.)
func FIFO(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	t.Cleanup(func() {
		// Non-blocking: with no reader waiting it fails at once (ENXIO),
		// and there is no one to release.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path
}

func interrupt(t testing.TB) {
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Errorf("SIGINT to self: %v", err)
	}
}
