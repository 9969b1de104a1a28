package target

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

// The truth: a --out that is a file, or lies under one, is bad input
// naming the file, before any load (the report's write used to find it,
// after the load, and every measurement was lost); a folder that exists,
// or does not yet, is taken, and the check leaves nothing behind.
func TestCheckWritableRefusesAFileAndLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "run1")} {
		err := checkWritable(out)
		if !badinput.Is(err) || !strings.Contains(err.Error(), "results is a file, not a folder") {
			t.Errorf("--out %s: %v; want bad input saying results is a file", out, err)
		}
	}
	for _, out := range []string{dir, filepath.Join(dir, "a", "b", "c")} {
		if err := checkWritable(out); err != nil {
			t.Errorf("--out %s: %v; want it taken", out, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d entries after the checks; want only the file", dir, len(ents))
	}
}
