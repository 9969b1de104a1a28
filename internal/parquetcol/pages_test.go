package parquetcol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// texts reads the text column of the parquet file at path: its non-empty
// values.
func texts(path string) ([]string, error) {
	p, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	all, err := p.Strings(0, false, "text")
	var out []string
	for _, s := range all {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, err
}

// mmluFixture is evals' DuckDB fixture (evals/testdata/make_duckdb_fixtures.mjs
// wrote it): zstd pages, a LIST column.
var mmluFixture = filepath.Join("..", "..", "evals", "testdata", "mmlu_duckdb.parquet")

// A text column in LZ4_RAW, its pages long runs that LZ4 codes as matches.
type lz4Row struct {
	Text string `parquet:"text,lz4"`
}

// Every one-byte corruption of an LZ4 file's pages either still reads or
// is an *Error: parquet-go's LZ4 decoder, left to a corrupt block, doubles
// its buffer without end, so each corrupt block must be caught before it.
func TestCorruptLZ4ParquetIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// "a" and "z" are the page statistics' min and max: the header stays
	// short, and the loop below reaches the data.
	rows := []lz4Row{{"a"}, {"z"}, {strings.Repeat("a", 3000)}, {strings.Repeat("ab", 2000)}, {"plain text"}}
	good := parquettest.Write(t, dir, "lz4.parquet", rows, 10)
	docs, err := texts(good)
	if err != nil || len(docs) != len(rows) {
		t.Fatalf("the intact file: %v, %v", docs, err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	b = withoutPageCRC(t, b)
	if err := os.WriteFile(good, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if docs, err := texts(good); err != nil || len(docs) != len(rows) {
		t.Fatalf("the file without page checksums: %v, %v", docs, err)
	}
	bad := filepath.Join(dir, "bad.parquet")
	corrupt := 0
	for i := 4; i < len(b)-8; i++ {
		m := append([]byte(nil), b...)
		m[i] ^= 0xff
		if err := os.WriteFile(bad, m, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := texts(bad)
		var de *Error
		switch {
		case err == nil:
		case errors.As(err, &de):
			corrupt++
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("byte %d: %q is not one line", i, err)
			}
		default:
			t.Fatalf("byte %d: %v, want an *Error", i, err)
		}
	}
	if corrupt == 0 {
		t.Fatal("no corruption was caught: the test touches no page")
	}
}

// withoutPageCRC is b, a parquet-go file, with its pages' checksums set to
// none, as pyarrow and DuckDB write them (parquet-go checks a checksum
// before decompressing, which would hide a corrupt block). Each CRC field
// keeps its length: 0 is written as a padded varint.
func withoutPageCRC(t *testing.T, b []byte) []byte {
	out, _ := pageData(t, b)
	return out
}

// pageData is withoutPageCRC(b) and where each page's data starts.
func pageData(t *testing.T, b []byte) ([]byte, []int64) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b...)
	var starts []int64
	cleared := 0
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			md := cc.MetaData
			off := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
				off = md.DictionaryPageOffset
			}
			end := off + md.TotalCompressedSize
			for off < end {
				r := bufio.NewReader(bytes.NewReader(b[off:end]))
				var h format.PageHeader
				if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil {
					t.Fatal(err)
				}
				hlen := int64(len(b[off:end]) - r.Buffered())
				// Field 4 (crc, i32) after field 3: header byte 0x15, then
				// the zigzag varint.
				field := binary.AppendUvarint([]byte{0x15}, uint64(uint32(h.CRC<<1^h.CRC>>31)))
				if h.CRC != 0 {
					i := bytes.Index(b[off:off+hlen], field)
					if i < 0 {
						t.Fatalf("page at %d: no CRC field", off)
					}
					at := off + int64(i) + 1
					for j := range len(field) - 1 {
						out[at+int64(j)] = 0x80
					}
					out[at+int64(len(field))-2] = 0
					cleared++
				}
				starts = append(starts, off+hlen)
				off += hlen + int64(h.CompressedPageSize)
			}
		}
	}
	if cleared == 0 {
		t.Fatal("no page had a checksum")
	}
	return out, starts
}

// A zstd page whose frame header states 32 GiB (the decoder allocates what
// the frame states, up to 64 GiB) is an *Error before any of it is
// allocated.
func TestZstdFrameTooLargeIsAnError(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(mmluFixture)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte{0x28, 0xb5, 0x2f, 0xfd})
	if at < 0 || b[at+4] != 0x60 {
		t.Fatalf("the fixture's first zstd frame (at %d) is not the one expected", at)
	}
	// A 1 KiB window (the decoder's window limit passes it), then an
	// 8-byte content size: 1<<35.
	b[at+4] = 0xc0
	copy(b[at+5:], []byte{0, 0, 0, 0, 0, 8, 0, 0, 0})
	p, err := OpenReader("m.parquet", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Strings(0, false, "question")
	var de *Error
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "zstd") {
		t.Fatalf("%v: want an *Error saying the zstd page is corrupt", err)
	}
}

func TestZstdFrameSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    []byte
		size uint64
		ok   bool
	}{
		{"single segment, 1 byte", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 7}, 7, true},
		{"2 bytes are 256 more", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x60, 1, 0}, 257, true},
		{"a window descriptor and a 1-byte dictionary ID first", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x81, 0x50, 9, 4, 0, 0, 0}, 4, true},
		{"no content size", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50}, 0, false},
		{"not zstd", []byte{1, 2, 3, 4, 5, 6}, 0, false},
		{"cut short", []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0, 1}, 0, false},
	} {
		if size, ok := zstdFrameSize(tc.b); size != tc.size || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, size, ok, tc.size, tc.ok)
		}
	}
}

// A snappy page whose block states more than the page's size (the decoder
// allocates what it states, up to 4 GiB) is an *Error.
func TestSnappyBlockTooLargeIsAnError(t *testing.T) {
	t.Parallel()
	type snappyRow struct {
		Text string `parquet:"text,snappy"`
	}
	p := parquettest.Write(t, t.TempDir(), "s.parquet", []snappyRow{{strings.Repeat("snappy ", 100)}}, 10)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b, starts := pageData(t, b)
	if len(starts) != 1 || b[starts[0]]&0x80 == 0 || b[starts[0]+1]&0x80 != 0 {
		t.Fatalf("pages at %v: want one whose block length takes 2 bytes", starts)
	}
	// 2 GiB in a 5-byte varint would shift the block: 16383 fits the 2 bytes.
	b[starts[0]], b[starts[0]+1] = 0xff, 0x7f
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = texts(p)
	var de *Error
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "corrupt snappy data (16383 bytes stated") {
		t.Fatalf("%v: want an *Error saying the snappy page is corrupt", err)
	}
}

// The page checks pass every valid page: LZ4, zstd and snappy, data pages
// v1 and v2 (whose levels are stored uncompressed before the values),
// optional columns with nulls, dictionary pages.
func TestPageChecksPassValidFiles(t *testing.T) {
	t.Parallel()
	type lz4Opt struct {
		Text *string `parquet:"text,optional,lz4"`
	}
	type zstdDict struct {
		Text *string `parquet:"text,optional,dict,zstd"`
	}
	type snappyOpt struct {
		Text *string `parquet:"text,optional,snappy"`
	}
	var a []lz4Opt
	var b []zstdDict
	var c []snappyOpt
	want := 0
	for i := range 300 {
		var s *string
		if i%7 != 3 {
			s = new(strings.Repeat(fmt.Sprintf("text %d ", i%11), 1+i%40))
			want++
		}
		a, b, c = append(a, lz4Opt{s}), append(b, zstdDict{s}), append(c, snappyOpt{s})
	}
	for _, version := range []int{1, 2} {
		dir := t.TempDir()
		for _, p := range []string{
			writePages(t, filepath.Join(dir, "lz4.parquet"), a, version),
			writePages(t, filepath.Join(dir, "zstd.parquet"), b, version),
			writePages(t, filepath.Join(dir, "snappy.parquet"), c, version),
		} {
			docs, err := texts(p)
			if err != nil || len(docs) != want {
				t.Errorf("v%d %s: %v docs, %v; want %d", version, filepath.Base(p), docs, err, want)
			}
		}
	}
}

// writePages writes rows to file in data pages of the version given, small
// pages and row groups of 120 rows.
func writePages[T any](t *testing.T, file string, rows []T, version int) string {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, parquet.DataPageVersion(version), parquet.PageBufferSize(512), parquet.MaxRowsPerRowGroup(120))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
