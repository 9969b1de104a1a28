package evals

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/glmbench/glmbench/internal/parquetcol"
)

// isParquet reports whether name is a parquet file by its extension, as the
// Hugging Face Hub names them (test-00000-of-00001.parquet).
func isParquet(name string) bool {
	return strings.EqualFold(filepath.Ext(name), ".parquet")
}

// withParquet opens the file name, read in place, and calls fn with it.
func withParquet[T any](name string, fn func(*parquetcol.File) (T, error)) (T, error) {
	var zero T
	p, err := parquetcol.OpenFile(name)
	if err != nil {
		return zero, pqErr(err)
	}
	defer p.Close()
	v, err := fn(p)
	return v, pqErr(err)
}

// readParquet runs parse on the parquet file r holds: read in place when r
// is a file, else read whole first.
func readParquet[T any](name string, r io.Reader, parse func(*parquetcol.File) (T, error)) (T, error) {
	var zero T
	p, err := parquetcol.OpenReader(name, r)
	if err != nil {
		return zero, pqErr(err)
	}
	v, err := parse(p)
	return v, pqErr(err)
}

// pqErr is err as a DataError: the parquet reader's errors name the file
// and say what (column, row) on one line, as a DataError does.
func pqErr(err error) error {
	var pe *parquetcol.Error
	if errors.As(err, &pe) {
		return dataErr(pe.File, 0, "%s", pe.Msg)
	}
	return err
}

// pqRowErr is a DataError for row i (0-based) of a parquet file.
func pqRowErr(name string, i int, format string, args ...any) error {
	return dataErr(name, 0, "row %d: %s", i+1, fmt.Sprintf(format, args...))
}
