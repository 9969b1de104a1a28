package evals

import (
	"io"
	"strings"
	"testing"
)

// A CSV with no line break past maxCSVLine (/dev/zero given as an MMLU
// file) fails with the bound in the error after reading little more than
// the bound, instead of being gathered into one record without end.
func TestReadCSVRefusesALineOverTheBound(t *testing.T) {
	zeros := io.LimitReader(zeroReader{}, 1<<40) // a terabyte, never read whole
	err := readCSV("zero.csv", zeros, func(int, []string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "over 4 MiB") {
		t.Fatalf("readCSV(/dev/zero) = %v, want a line-over-4-MiB error", err)
	}
}

// Lines under the bound, however many, are read as before.
func TestReadCSVReadsManyShortLines(t *testing.T) {
	in := strings.Repeat("q,a,b,c,d,A\n", 1<<20) // 12 MiB in all, short lines
	rows := 0
	if err := readCSV("ok.csv", strings.NewReader(in), func(int, []string) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	if rows != 1<<20 {
		t.Errorf("rows = %d, want %d", rows, 1<<20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
