package parquetcol

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

type answerStruct struct {
	Aliases []string `parquet:"aliases,list"`
	Value   string   `parquet:"value"`
}

type apiRow struct {
	Question *string      `parquet:"question,optional"`
	Answer   answerStruct `parquet:"answer"`
	Label    int64        `parquet:"label"`
}

// The columns read back what parquet-go wrote: nulls as "", a struct's
// fields by path, integers, the first limit rows only, across row groups.
func TestColumnsReadBackWhatWasWritten(t *testing.T) {
	t.Parallel()
	q := func(s string) *string { return &s }
	rows := []apiRow{
		{q("one"), answerStruct{[]string{"a", "b"}, "A"}, 3},
		{nil, answerStruct{nil, "B"}, -1},
		{q("three"), answerStruct{[]string{"c"}, ""}, 7},
	}
	p, err := OpenFile(parquettest.Write(t, t.TempDir(), "api.parquet", rows, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Rows() != 3 || p.Limit(0) != 3 || p.Limit(2) != 2 || p.Limit(9) != 3 {
		t.Fatalf("rows %d, limits %d %d %d", p.Rows(), p.Limit(0), p.Limit(2), p.Limit(9))
	}
	if got, err := p.Strings(0, false, "question"); err != nil || !reflect.DeepEqual(got, []string{"one", "", "three"}) {
		t.Errorf("question: %q, %v", got, err)
	}
	if got, err := p.Strings(2, true, "subject"); err != nil || !reflect.DeepEqual(got, []string{"", ""}) {
		t.Errorf("an optional column the file lacks: %q, %v", got, err)
	}
	if got, err := p.StringLists(0, "answer", "aliases"); err != nil || !reflect.DeepEqual(got, [][]string{{"a", "b"}, {}, {"c"}}) {
		t.Errorf("answer.aliases: %q, %v", got, err)
	}
	if got, err := p.Strings(2, false, "answer", "value"); err != nil || !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("answer.value, 2 rows: %q, %v", got, err)
	}
	c, err := p.Column("label")
	if err != nil || c.Kind != Int || c.List {
		t.Fatalf("label: %+v, %v", c, err)
	}
	var labels []int64
	if err := p.Values(c, 0, func(i int, vals []Value) error { labels = append(labels, vals[0].Num); return nil }); err != nil || !reflect.DeepEqual(labels, []int64{3, -1, 7}) {
		t.Errorf("label: %v, %v", labels, err)
	}
	if !p.HasField("answer", "aliases") || p.HasField("answer", "type") || !p.Has("Question") || p.Has("subject") {
		t.Error("Has and HasField do not see the schema")
	}
	if p.Columns() != "question, answer, label" {
		t.Errorf("columns %q", p.Columns())
	}
}

// Each error is an *Error of one line naming the file, and the column
// where there is one.
func TestErrorsNameTheFileAndColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := parquettest.Write(t, dir, "e.parquet", []apiRow{{nil, answerStruct{}, 1}}, 10)
	p, err := OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, errMissing := OpenFile(filepath.Join(dir, "none.parquet"))
	_, errNoCol := p.Strings(0, false, "choices")
	_, errType := p.Strings(0, false, "label")
	_, errStruct := p.Column("answer")
	_, errField := p.Column("answer", "type")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errMissing, "none.parquet: no such file"},
		{errNoCol, file + `: no column "choices" (the file has: question, answer, label)`},
		{errType, file + `: column "label" is INT64, want strings`},
		{errStruct, file + `: column "answer" is a struct, want a value or a list`},
		{errField, file + `: column "answer" has no field "type"`},
	} {
		var pe *Error
		if !errors.As(tc.err, &pe) || !strings.HasSuffix(tc.err.Error(), tc.want) {
			t.Errorf("%v: want an *Error ending %q", tc.err, tc.want)
		}
	}
}

type turn struct {
	From  string  `parquet:"from"`
	Value *string `parquet:"value,optional"`
}

type convRow struct {
	ID            int64  `parquet:"id"`
	Conversations []turn `parquet:"conversations,list"`
}

// A list of structs reads field by field, each a list per row in the
// same order; reading in batches From(n) gives the rows one read gives,
// numbered as in the file, across row groups of 3 rows.
func TestListsOfStructsReadInBatchesAsWhole(t *testing.T) {
	t.Parallel()
	var rows []convRow
	for i := range 11 {
		r := convRow{ID: int64(i)}
		for j := range i % 4 {
			v := fmt.Sprintf("turn %d.%d", i, j)
			r.Conversations = append(r.Conversations, turn{From: []string{"human", "gpt"}[j%2], Value: &v})
		}
		if i == 5 {
			r.Conversations[0].Value = nil
		}
		rows = append(rows, r)
	}
	p, err := OpenFile(parquettest.Write(t, t.TempDir(), "conv.parquet", rows, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	from, err := p.StringLists(0, "conversations", "from")
	if err != nil {
		t.Fatal(err)
	}
	values, err := p.StringLists(0, "conversations", "value")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var wf, wv []string
		for _, tr := range r.Conversations {
			wf = append(wf, tr.From)
			v := ""
			if tr.Value != nil {
				v = *tr.Value
			}
			wv = append(wv, v)
		}
		if len(from[i]) != len(wf) || !slices.Equal(from[i], wf) || !slices.Equal(values[i], wv) {
			t.Errorf("row %d: %q %q, want %q %q", i, from[i], values[i], wf, wv)
		}
	}
	for _, batch := range []int{1, 2, 3, 4, 5, 11} {
		var got [][]string
		var numbers []int
		for at := 0; at < p.Rows(); at += batch {
			q := p.From(at)
			c, err := q.Column("conversations", "value")
			if err != nil {
				t.Fatal(err)
			}
			err = q.Values(c, batch, func(i int, vals []Value) error {
				numbers = append(numbers, i)
				var l []string
				for _, v := range vals {
					l = append(l, v.Str)
				}
				got = append(got, l)
				return nil
			})
			if err != nil {
				t.Fatalf("batch %d at %d: %v", batch, at, err)
			}
		}
		for i := range rows {
			if i >= len(got) || numbers[i] != i || !slices.Equal(got[i], values[i]) {
				t.Fatalf("batches of %d: rows %v %q, want the whole read's %q", batch, numbers, got, values)
			}
		}
		if len(got) != len(rows) {
			t.Fatalf("batches of %d: %d rows, want %d", batch, len(got), len(rows))
		}
	}
}

// A read of the first rows reads only the row groups that hold them: a
// corrupt page in a later group is not met (a 1 GB file is not read whole
// for its first rows), and is met by a read of all rows.
func TestAReadStopsAtTheRowGroupsItNeeds(t *testing.T) {
	t.Parallel()
	var rows []lz4Row
	for i := range 6 {
		rows = append(rows, lz4Row{strings.Repeat(fmt.Sprintf("row %d ", i), 200)})
	}
	dir := t.TempDir()
	file := parquettest.Write(t, dir, "groups.parquet", rows, 3)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, starts := pageData(t, b)
	if len(starts) < 2 {
		t.Fatalf("pages at %v: want one per row group at least", starts)
	}
	// The last page's block, all ones: not LZ4 a decoder can undo.
	last := starts[len(starts)-1]
	for i := last; i < last+8; i++ {
		b[i] = 0xff
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got, err := p.Strings(3, false, "text"); err != nil || len(got) != 3 || got[2] != rows[2].Text {
		t.Fatalf("the first group's rows: %d, %v", len(got), err)
	}
	var pe *Error
	if _, err := p.Strings(0, false, "text"); !errors.As(err, &pe) || !strings.Contains(err.Error(), "LZ4") {
		t.Fatalf("all rows: %v, want an *Error for the corrupt LZ4 page", err)
	}
}

// withRows is the parquet file b with its footer's row count, and each row
// group's (and, with values, its columns' value counts), set as given
// (rows < 0: left as they are).
func withRows(t *testing.T, b []byte, rows int64, values bool, groupRows ...int64) []byte {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[len(b)-8-n:len(b)-8], &md); err != nil {
		t.Fatal(err)
	}
	if rows >= 0 {
		md.NumRows = rows
	}
	for i, r := range groupRows {
		md.RowGroups[i].NumRows = r
		for j := range md.RowGroups[i].Columns {
			if values {
				md.RowGroups[i].Columns[j].MetaData.NumValues = r
			}
		}
	}
	foot, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:len(b)-8-n]...), foot...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(foot)))
	return append(out, "PAR1"...)
}

// A footer whose row counts disagree (the file's with its row groups', a
// group's with its columns' value counts) is an *Error; one whose counts
// agree but are corrupt alike costs no allocation of what they claim:
// reads allocate as they find rows, and the rows missing are an *Error.
func TestACorruptRowCountIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile(parquettest.Write(t, dir, "r.parquet", []lz4Row{{"a"}, {"b"}, {"c"}}, 2))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := OpenReader("ok.parquet", bytes.NewReader(withRows(t, b, -1, false))); err != nil || p.Rows() != 3 {
		t.Fatalf("the footer re-encoded as it was: %v", err)
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		want   string
		onRead bool
	}{
		{"the file's 2^40 rows", withRows(t, b, 1<<40, false), "it says 1099511627776 rows, its row groups hold 3", false},
		{"a row group's 2^40 rows", withRows(t, b, 1<<40+1, false, 1<<40, 1), "row group 1 has 1099511627776 rows, a column of it 2 values", false},
		{"2^40 rows and values alike", withRows(t, b, 1<<40+1, true, 1<<40, 1), `column "text" has 3 rows, the file says 1099511627777`, true},
	} {
		p, err := OpenReader("r.parquet", bytes.NewReader(tc.b))
		if tc.onRead && err == nil {
			_, err = p.Strings(0, false, "text")
		}
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an *Error saying %q", tc.name, err, tc.want)
		}
	}
}

type snappyRow struct {
	Text string `parquet:"text,snappy"`
}

type zstdRow struct {
	Text string `parquet:"text,zstd"`
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r bytes.Reader
	n int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n += int64(n)
	return n, err
}

// A read of a row group's first rows reads (and checks) only the pages
// that hold them, not the group's whole column: pandas writes a file of a
// million rows as one row group, and a phase of 200 requests reads its
// first 200.
func TestAReadOfTheFirstRowsReadsTheirPagesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sn []snappyRow
	var zs []zstdRow
	for i := range 4000 {
		// Text snappy and zstd cannot shrink much.
		s := fmt.Sprintf("%d:%x", i, sha(i))
		sn, zs = append(sn, snappyRow{s}), append(zs, zstdRow{s})
	}
	for _, file := range []string{parquettest.Write(t, dir, "s.parquet", sn, 1<<20), parquettest.Write(t, dir, "z.parquet", zs, 1<<20)} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cr := &countingReader{r: *bytes.NewReader(b)}
		p, err := Open(file, cr, int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.f.RowGroups()) != 1 {
			t.Fatalf("%d row groups, want 1", len(p.f.RowGroups()))
		}
		got, err := p.Strings(10, false, "text")
		if err != nil || len(got) != 10 || got[9] != sn[9].Text {
			t.Fatalf("%s: %q, %v", file, got, err)
		}
		if cr.n > int64(len(b))/4 {
			t.Errorf("%s: read %d bytes of %d for its first 10 rows", filepath.Base(file), cr.n, len(b))
		}
		// All rows still read, and checked.
		if got, err := p.Strings(0, false, "text"); err != nil || len(got) != 4000 || got[3999] != sn[3999].Text {
			t.Errorf("%s: all rows: %d, %v", file, len(got), err)
		}
	}
}

// sha is 64 bytes that do not repeat from i to i.
func sha(i int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprint(i)))
	h2 := sha256.Sum256(h[:])
	return append(h[:], h2[:]...)
}

// A cursor read a batch at a time gives the rows one read gives, numbered
// as in the file, from a start inside a row group, across pages and row
// groups, and reads each page once (and its check once): reading a
// one-row-group file in batches reads it about twice, where reads From(n)
// read its start again each batch.
func TestACursorReadsInBatchesAsWhole(t *testing.T) {
	t.Parallel()
	var rows []convRow
	for i := range 40 {
		r := convRow{ID: int64(i)}
		for j := range i % 5 {
			v := fmt.Sprintf("turn %d.%d %s", i, j, strings.Repeat("x", i*j))
			r.Conversations = append(r.Conversations, turn{From: []string{"human", "gpt"}[j%2], Value: &v})
		}
		rows = append(rows, r)
	}
	p, err := OpenFile(parquettest.Write(t, t.TempDir(), "conv.parquet", rows, 7))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, start := range []int{0, 3, 7, 39} {
		want, err := p.From(start).StringLists(0, "conversations", "value")
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{1, 2, 3, 6, 7, 40} {
			k, err := p.From(start).StringCursor(true, "conversations", "value")
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for range (len(want) + batch - 1) / batch {
				b, err := k.StringLists(batch)
				if err != nil {
					t.Fatalf("from %d, batches of %d: %v", start, batch, err)
				}
				got = append(got, b...)
			}
			if b, err := k.StringLists(batch); err != nil || len(b) != 0 {
				t.Errorf("from %d, batches of %d: past the end %q, %v", start, batch, b, err)
			}
			k.Close()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("from %d, batches of %d:\n got %q\nwant %q", start, batch, got, want)
			}
		}
	}
	// Bytes read: a one-group file of 4000 rows in batches of 100.
	var sn []snappyRow
	for i := range 4000 {
		sn = append(sn, snappyRow{fmt.Sprintf("%d:%x", i, sha(i))})
	}
	b, err := os.ReadFile(parquettest.Write(t, t.TempDir(), "s.parquet", sn, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: *bytes.NewReader(b)}
	q, err := Open("s.parquet", cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := q.StringCursor(false, "text")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	n := 0
	for range 40 {
		got, err := k.Strings(100)
		if err != nil || len(got) != 100 || got[0] != sn[n].Text {
			t.Fatalf("at %d: %d, %v", n, len(got), err)
		}
		n += len(got)
	}
	// Each page is read twice, by its check and by parquet-go.
	if cr.n > int64(len(b))*5/2 {
		t.Errorf("40 batches read %d bytes of %d", cr.n, len(b))
	}
}
