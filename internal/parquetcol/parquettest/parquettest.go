// Package parquettest writes the parquet files the readers' tests read: the
// column reader's own, the evals' data sets and the workload's. It imports
// testing and is for tests only.
package parquettest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Write writes rows to dir/name (name may hold folders) with parquet-go, in row groups of groupRows
// rows and small pages, so that readers meet several of each, and returns
// the file's path. It fails t where more rows than one group holds did not
// make several groups: a test of the readers' crossing from one row group
// to the next would otherwise prove nothing.
func Write[T any](t testing.TB, dir, name string, rows []T, groupRows int64) string {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, parquet.MaxRowsPerRowGroup(groupRows), parquet.PageBufferSize(256))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); int64(len(rows)) > groupRows && n < 2 {
		t.Fatalf("%s: %d rows in %d row group, want several", name, len(rows), n)
	}
	file := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
