// Package boundedfile reads a small input file whole, up to a bound: a
// workload, an endpoints or threshold file, a server-args or cost file, a
// report. Given /dev/zero, a data set or a weights file by mistake, a reader
// without a bound reads until memory runs out; this one refuses in one line.
// A pipe (--workload <(gen)) is read as a file is.
package boundedfile

import (
	"fmt"
	"io"
	"os"
)

// TooBigError is Read's error for a file past its bound.
type TooBigError struct {
	// Path is the file; Max its bound in bytes; What names what the file
	// should have been ("a workload file").
	Path string
	Max  int64
	What string
}

func (e *TooBigError) Error() string {
	return fmt.Sprintf("%s: over %d MiB, not %s", e.Path, e.Max>>20, e.What)
}

// Read returns the file at path whole when it holds at most max bytes; a
// longer one is a *TooBigError, read no further than max+1 bytes. Errors
// opening or reading it are the os package's, as they are.
func Read(path string, max int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooBigError{Path: path, Max: max, What: what}
	}
	return b, nil
}
