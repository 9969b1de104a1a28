// Package boundedfiletest makes the files that test a reader's bound: a
// file of any size that costs no disk.
package boundedfiletest

import (
	"os"
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
