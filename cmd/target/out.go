package target

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/glmbench/glmbench/internal/badinput"
)

// checkWritable says, before any load, whether the report can be written
// in dir: a --out that is a file, a link to nothing, or in a folder this
// user cannot write, used to be found only when the first report was
// written, after the load, and every measurement was lost. It leaves no
// trace: a folder that is not there yet is tried in the nearest one that
// is.
func checkWritable(dir string) error {
	probe := dir
	for {
		st, err := os.Stat(probe)
		if err == nil {
			if !st.IsDir() {
				return badinput.Errorf("--out %s: %s is a file, not a folder", dir, probe)
			}
			break
		}
		// A path through a file (out/sub where out is one) is ENOTDIR:
		// the file is found going up.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return badinput.Errorf("--out %s: %v", dir, err)
		}
		// A link to nothing (a share not mounted) is there, yet not a
		// folder: the report's MkdirAll would fail on it.
		if to, lerr := os.Readlink(probe); lerr == nil {
			return badinput.Errorf("--out %s: %s is a link to %s, which is not there", dir, probe, to)
		}
		up := filepath.Dir(probe)
		if up == probe {
			break
		}
		probe = up
	}
	tmp, err := os.MkdirTemp(probe, ".glmbench-write-check-")
	if err != nil {
		return badinput.Errorf("--out %s: the report could not be written there: %v", dir, errors.Unwrap(err))
	}
	return os.Remove(tmp)
}
