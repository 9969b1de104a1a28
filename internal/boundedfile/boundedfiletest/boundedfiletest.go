// Package boundedfiletest makes the files that test a reader's bound: a
// file of any size that costs no disk.
package boundedfiletest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sparse creates path as a sparse file of size bytes (zeros, no disk
// blocks) and returns path; any error fails t.
func Sparse(t testing.TB, path string, size int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}

// OverBound makes name, in a directory of its own, a sparse file one byte
// past max and returns read's error for it, failing t unless that error
// says want (the bound, as "over 16 MiB"): the file is refused, not read
// whole into memory.
func OverBound(t testing.TB, name string, max int64, want string, read func(path string) error) error {
	t.Helper()
	err := read(Sparse(t, filepath.Join(t.TempDir(), name), max+1))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reading %d bytes: %v, want an error saying %s", max+1, err, want)
	}
	return err
}
