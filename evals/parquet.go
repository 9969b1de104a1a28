package evals

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/parquet-go/parquet-go"
)

// isParquet reports whether name is a parquet file by its extension, as the
// Hugging Face Hub names them (test-00000-of-00001.parquet).
func isParquet(name string) bool {
	return strings.EqualFold(filepath.Ext(name), ".parquet")
}

// pqFile is a parquet file whose columns are read by name. The reader keeps
// to what real files hold: dictionary or plain pages, any codec
// parquet-go decodes (snappy, zstd, gzip, brotli, lz4), optional columns,
// lists in the three-level LIST layout or the legacy two-level one, structs,
// several row groups; arrow's large_string is a BYTE_ARRAY like string.
type pqFile struct {
	name string
	f    *parquet.File
	// ra holds the file, for the pages checkPages reads itself.
	ra io.ReaderAt
}

// openParquet opens a parquet file held by r; a file that is not parquet is
// a DataError.
func openParquet(name string, r io.ReaderAt, size int64) (p *pqFile, err error) {
	defer pqRecover(name, "", &err)
	// parquet-go allocates the footer's stated length before reading it:
	// a corrupt length would cost gigabytes, so it is checked first.
	var head, tail [8]byte
	if size < 12 {
		return nil, dataErr(name, 0, "not a parquet file: %d bytes", size)
	}
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return nil, dataErr(name, 0, "%v", err)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, dataErr(name, 0, "%v", err)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return nil, dataErr(name, 0, "not a parquet file (no PAR1 magic at its start and end)")
	}
	if n := binary.LittleEndian.Uint32(tail[:4]); int64(n) > size-12 {
		return nil, dataErr(name, 0, "not a parquet file: its footer claims %d bytes of %d", n, size)
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, dataErr(name, 0, "not a parquet file: %v", err)
	}
	return &pqFile{name: name, f: f, ra: r}, nil
}

// withParquet opens the file name and calls fn with it.
func withParquet[T any](name string, fn func(*pqFile) (T, error)) (T, error) {
	var zero T
	f, err := openData(name)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return zero, dataErr(name, 0, "%v", err)
	}
	p, err := openParquet(name, f, st.Size())
	if err != nil {
		return zero, err
	}
	return fn(p)
}

// pqRecover turns a panic of the parquet decoder (a corrupt file) into a
// DataError, naming the column being read, if any.
func pqRecover(name, column string, err *error) {
	if r := recover(); r != nil {
		msg := text.OneLine(fmt.Sprint(r))
		if column != "" {
			*err = dataErr(name, 0, "column %q: corrupt parquet file: %s", column, msg)
			return
		}
		*err = dataErr(name, 0, "corrupt parquet file: %s", msg)
	}
}

// rows is the number of rows in the file.
func (p *pqFile) rows() int { return int(p.f.NumRows()) }

// pqLeaf is one leaf column found by name.
type pqLeaf struct {
	// name is the column as asked for ("answer.aliases"), for errors.
	name  string
	index int
	kind  parquet.Kind
	// list is whether the column holds a list per row; elemDef is the
	// definition level from which a list element is present (null below
	// maxDef).
	list            bool
	elemDef, maxDef int
}

func (l pqLeaf) describe() string {
	if l.list {
		return "a list of " + l.kind.String()
	}
	return l.kind.String()
}

// columns lists the top-level column names, for errors: quoted where a
// name has a character that would not print plainly (the error stays one
// line).
func (p *pqFile) columns() string {
	var names []string
	for _, fl := range p.f.Schema().Fields() {
		n := fl.Name()
		if q := strconv.Quote(n); q != `"`+n+`"` {
			n = q
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// has reports whether the file has a top-level column name.
func (p *pqFile) has(name string) bool {
	return pqField(p.f.Schema(), name) != nil
}

// pqField is n's field name, matched exactly or else without regard to case.
func pqField(n parquet.Node, name string) parquet.Field {
	var fold parquet.Field
	for _, fl := range n.Fields() {
		if fl.Name() == name {
			return fl
		}
		if fold == nil && strings.EqualFold(fl.Name(), name) {
			fold = fl
		}
	}
	return fold
}

// leaf finds the leaf column at path (a top-level column, or a struct's
// field: "answer", "aliases"). A list's wrapper groups (list/element,
// list/item, array, bag/array_element) are stepped through whatever they are
// named.
func (p *pqFile) leaf(path ...string) (l pqLeaf, err error) {
	// A corrupt schema can make parquet-go panic (a group taken for a
	// leaf).
	defer pqRecover(p.name, strings.Join(path, "."), &err)
	l = pqLeaf{name: strings.Join(path, ".")}
	var n parquet.Node = p.f.Schema()
	var names []string
	def, reps := 0, 0
	step := func(fl parquet.Field) {
		n = fl
		names = append(names, fl.Name())
		if !fl.Required() {
			def++
		}
		if fl.Repeated() {
			reps++
			l.elemDef = def
		}
	}
	for _, name := range path {
		fl := pqField(n, name)
		if fl == nil {
			if len(names) == 0 {
				return l, dataErr(p.name, 0, "no column %q (the file has: %s)", l.name, p.columns())
			}
			return l, dataErr(p.name, 0, "column %q has no field %q", strings.Join(names, "."), name)
		}
		step(fl)
	}
	for !n.Leaf() {
		fields := n.Fields()
		if len(fields) != 1 {
			return l, dataErr(p.name, 0, "column %q is a struct, want a value or a list", l.name)
		}
		step(fields[0])
	}
	if reps > 1 {
		return l, dataErr(p.name, 0, "column %q is a list of lists", l.name)
	}
	lc, ok := p.f.Schema().Lookup(names...)
	if !ok {
		return l, dataErr(p.name, 0, "column %q: not found in the schema", l.name)
	}
	l.index, l.kind, l.list, l.maxDef = lc.ColumnIndex, n.Type().Kind(), reps == 1, lc.MaxDefinitionLevel
	return l, nil
}

// pqValue is one value read: a string for BYTE_ARRAY columns, a number
// for integer ones.
type pqValue struct {
	str  string
	num  int64
	null bool
}

// read calls row for each of the first limit rows (0: all) with that row's
// values: one for a value column (null when absent), the elements for a
// list (none for an empty or null list).
func (p *pqFile) read(l pqLeaf, limit int, row func(i int, vals []pqValue) error) (err error) {
	defer pqRecover(p.name, l.name, &err)
	if err := p.checkPages(l); err != nil {
		return err
	}
	r := &pqRows{p: p, leaf: l, limit: p.limit(limit), row: row}
	for _, rg := range p.f.RowGroups() {
		if r.n >= r.limit {
			break
		}
		if err := r.chunk(rg.ColumnChunks()[l.index].Pages()); err != nil {
			return err
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	if r.n < r.limit {
		return dataErr(p.name, 0, "column %q has %d rows, the file says %d", l.name, r.n, r.limit)
	}
	return nil
}

// pqRows gathers one column's values into rows: a value of repetition
// level 0 starts a row (a row never spans row groups, but may span pages).
type pqRows struct {
	p       *pqFile
	leaf    pqLeaf
	limit   int
	row     func(i int, vals []pqValue) error
	n       int // rows handed to row
	cur     []pqValue
	started bool // cur holds a row begun
}

// chunk reads one column chunk's pages until limit rows are complete.
func (r *pqRows) chunk(pages parquet.Pages) error {
	defer pages.Close()
	for r.n < r.limit {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return dataErr(r.p.name, 0, "column %q: %v", r.leaf.name, err)
		}
		err = r.page(page)
		parquet.Release(page)
		if err != nil {
			return err
		}
	}
	return nil
}

// page reads one page's values, copying them out before it is released.
func (r *pqRows) page(page parquet.Page) error {
	buf := make([]parquet.Value, 512)
	vr := page.Values()
	for {
		k, err := vr.ReadValues(buf)
		for _, v := range buf[:k] {
			if v.RepetitionLevel() == 0 {
				if err := r.flush(); err != nil {
					return err
				}
				if r.n == r.limit {
					return nil
				}
				r.started, r.cur = true, r.cur[:0]
			}
			r.cur = r.leaf.add(r.cur, v)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return dataErr(r.p.name, 0, "column %q: %v", r.leaf.name, err)
		}
	}
}

// flush hands the row begun, if any, to row.
func (r *pqRows) flush() error {
	if !r.started {
		return nil
	}
	r.started = false
	r.n++
	return r.row(r.n-1, r.cur)
}

// add appends v to a row's values, copied out of the page's buffers.
func (l pqLeaf) add(cur []pqValue, v parquet.Value) []pqValue {
	d := v.DefinitionLevel()
	if l.list && d < l.elemDef {
		return cur // an empty or null list
	}
	if d < l.maxDef || v.IsNull() {
		return append(cur, pqValue{null: true})
	}
	switch l.kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return append(cur, pqValue{str: string(v.ByteArray())})
	case parquet.Int32, parquet.Int64:
		return append(cur, pqValue{num: v.Int64()})
	}
	return append(cur, pqValue{null: true})
}

// stringColumn reads a string column, one value per row ("" where null, or
// absent when optional and the file lacks it).
func (p *pqFile) stringColumn(limit int, optional bool, path ...string) ([]string, error) {
	if optional && !p.has(path[0]) {
		return make([]string, p.limit(limit)), nil
	}
	l, err := p.leaf(path...)
	if err != nil {
		return nil, err
	}
	if l.list || l.kind != parquet.ByteArray {
		return nil, dataErr(p.name, 0, "column %q is %s, want strings", l.name, l.describe())
	}
	out := make([]string, 0, p.limit(limit))
	err = p.read(l, limit, func(i int, vals []pqValue) error {
		if !utf8.ValidString(vals[0].str) {
			return dataErr(p.name, 0, "row %d: column %q is not valid UTF-8", i+1, l.name)
		}
		out = append(out, vals[0].str)
		return nil
	})
	return out, err
}

// stringLists reads a column of lists of strings, one list per row (null
// elements as "").
func (p *pqFile) stringLists(limit int, path ...string) ([][]string, error) {
	l, err := p.leaf(path...)
	if err != nil {
		return nil, err
	}
	if !l.list || l.kind != parquet.ByteArray {
		return nil, dataErr(p.name, 0, "column %q is %s, want a list of strings", l.name, l.describe())
	}
	out := make([][]string, 0, p.limit(limit))
	err = p.read(l, limit, func(i int, vals []pqValue) error {
		list := make([]string, len(vals))
		for j, v := range vals {
			if !utf8.ValidString(v.str) {
				return dataErr(p.name, 0, "row %d: column %q is not valid UTF-8", i+1, l.name)
			}
			list[j] = v.str
		}
		out = append(out, list)
		return nil
	})
	return out, err
}

// limit is the number of rows read with limit.
func (p *pqFile) limit(limit int) int {
	if limit <= 0 || limit > p.rows() {
		return p.rows()
	}
	return limit
}

// pqRowErr is a DataError for row i (0-based) of a parquet file.
func pqRowErr(name string, i int, format string, args ...any) error {
	return dataErr(name, 0, "row %d: %s", i+1, fmt.Sprintf(format, args...))
}
