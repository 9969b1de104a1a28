package boundedfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A file of exactly the bound is read whole; one byte more is a TooBigError
// naming the bound, whatever the file holds (a sparse file costs no disk).
func TestReadTakesTheBoundAndRefusesOneByteMore(t *testing.T) {
	const max = 1 << 20
	dir := t.TempDir()
	for _, size := range []int64{max, max + 1} {
		path := boundedfiletest.Sparse(t, filepath.Join(dir, "f"), size)
		b, err := Read(path, max, "a small file")
		var tb *TooBigError
		switch {
		case size == max && (err != nil || int64(len(b)) != max):
			t.Errorf("%d bytes: %d read, %v; want all of them", size, len(b), err)
		case size > max && (!errors.As(err, &tb) || err.Error() != path+": over 1 MiB, not a small file"):
			t.Errorf("%d bytes: %v; want over 1 MiB, not a small file", size, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "none"), max, "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want the os error", err)
	}
}
