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

// The truth: a --out that is, or lies under, a link to nothing (a share
// not mounted, a folder since deleted) cannot take the report: the write's
// MkdirAll finds the link and fails ("file exists"), after the load. It is
// bad input naming the link before any load, as a file there is; a link to
// a folder is taken, through the link.
func TestCheckWritableRefusesALinkToNothing(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "results")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Skip(err)
	}
	for _, out := range []string{link, filepath.Join(link, "run1")} {
		err := checkWritable(out)
		if !badinput.Is(err) || !strings.Contains(err.Error(), "results is a link to") {
			t.Errorf("--out %s: %v; want bad input saying results is a link to nothing", out, err)
		}
		if mkErr := os.MkdirAll(out, 0o755); mkErr == nil {
			t.Fatalf("MkdirAll(%s) took the link: the premise is wrong", out)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{link, filepath.Join(link, "run1")} {
		if err := checkWritable(out); err != nil {
			t.Errorf("--out %s through a link to a folder: %v; want it taken", out, err)
		}
	}
}
