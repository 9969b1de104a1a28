// Package parquetcol reads a parquet file's columns by name: strings, lists
// of strings and integers, through list wrappers and structs, optional
// values and row groups. It keeps to what real files hold: dictionary or
// plain pages, any codec parquet-go decodes (snappy, zstd, gzip, brotli,
// lz4), lists in the three-level LIST layout or the legacy two-level one,
// several row groups; arrow's large_string is a BYTE_ARRAY like string.
//
// A corrupt file never costs what its headers claim, nor panics: the
// footer's length and each LZ4, zstd or snappy page are bounded before
// parquet-go decodes them (pages.go), and a decoder's panic is an *Error.
package parquetcol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Error is a file that is not parquet, is corrupt, or lacks what was asked
// for. File names the file; Msg says what, naming the column and row where
// there is one, on one line.
type Error struct {
	File string
	Msg  string
}

func (e *Error) Error() string { return e.File + ": " + e.Msg }

func errorf(file, msg string, args ...any) error {
	return &Error{File: file, Msg: fmt.Sprintf(msg, args...)}
}

// File is a parquet file whose columns are read by name.
type File struct {
	name string
	f    *parquet.File
	// ra holds the file, for the pages pageCheck reads itself.
	ra io.ReaderAt
	// closer is the file OpenFile opened, nil otherwise.
	closer io.Closer
	// start is the first row reads begin at (From).
	start int
}

// Open opens the parquet file of size bytes that r holds, named name in
// errors; a file that is not parquet is an *Error.
func Open(name string, r io.ReaderAt, size int64) (p *File, err error) {
	defer recoverAs(name, "", &err)
	// parquet-go allocates the footer's stated length before reading it:
	// a corrupt length would cost gigabytes, so it is checked first.
	var head, tail [8]byte
	if size < 12 {
		return nil, errorf(name, "not a parquet file: %d bytes", size)
	}
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return nil, errorf(name, "%v", err)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, errorf(name, "%v", err)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return nil, errorf(name, "not a parquet file (no PAR1 magic at its start and end)")
	}
	if n := binary.LittleEndian.Uint32(tail[:4]); int64(n) > size-12 {
		return nil, errorf(name, "not a parquet file: its footer claims %d bytes of %d", n, size)
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, errorf(name, "not a parquet file: %v", err)
	}
	if err := checkRows(name, f.Metadata()); err != nil {
		return nil, err
	}
	return &File{name: name, f: f, ra: r}, nil
}

// checkRows checks the footer's row counts, which parquet-go trusts: the
// file's is its row groups' sum, and each column chunk of a group states at
// least a value a row (a null is a value). A read allocates as it finds
// rows (at most maxPrealloc ahead), so a corrupt count costs nothing past
// this, but a count that disagrees is a corrupt file.
func checkRows(name string, md *format.FileMetaData) error {
	var sum int64
	for g, rg := range md.RowGroups {
		if rg.NumRows < 0 || sum+rg.NumRows < sum {
			return errorf(name, "corrupt footer: row group %d has %d rows", g+1, rg.NumRows)
		}
		sum += rg.NumRows
		for _, c := range rg.Columns {
			if c.MetaData.NumValues < rg.NumRows {
				return errorf(name, "corrupt footer: row group %d has %d rows, a column of it %d values", g+1, rg.NumRows, c.MetaData.NumValues)
			}
		}
	}
	if md.NumRows != sum {
		return errorf(name, "corrupt footer: it says %d rows, its row groups hold %d", md.NumRows, sum)
	}
	return nil
}

// maxPrealloc bounds the rows a read allocates room for before it finds
// them, as a footer's counts may be corrupt.
const maxPrealloc = 4096

// OpenFile opens the parquet file at path, read in place; Close closes it.
// A missing file is an *Error saying "no such file".
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(path, "no such file")
		}
		return nil, errorf(path, "%v", errors.Unwrap(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errorf(path, "%v", err)
	}
	p, err := Open(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	p.closer = f
	return p, nil
}

// OpenReader opens the parquet file r holds, named name in errors: read in
// place when r is an *os.File, else read whole first.
func OpenReader(name string, r io.Reader) (*File, error) {
	if f, ok := r.(*os.File); ok {
		st, err := f.Stat()
		if err != nil {
			return nil, errorf(name, "%v", err)
		}
		return Open(name, f, st.Size())
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, errorf(name, "%v", err)
	}
	return Open(name, bytes.NewReader(b), int64(len(b)))
}

// Close closes the file OpenFile opened; for one from Open or OpenReader
// it does nothing (the caller owns the reader).
func (p *File) Close() error {
	if p.closer == nil {
		return nil
	}
	return p.closer.Close()
}

// recoverAs turns a panic of the parquet decoder (a corrupt file) into an
// *Error, naming the column being read, if any.
func recoverAs(name, column string, err *error) {
	if r := recover(); r != nil {
		msg := text.OneLine(fmt.Sprint(r))
		if column != "" {
			*err = errorf(name, "column %q: corrupt parquet file: %s", column, msg)
			return
		}
		*err = errorf(name, "corrupt parquet file: %s", msg)
	}
}

// Name is the file's name, as its errors give it.
func (p *File) Name() string { return p.name }

// Rows is the number of rows in the file.
func (p *File) Rows() int { return int(p.f.NumRows()) }

// From is p with its reads starting at row (0-based) instead of the first:
// a file is read a batch of rows at a time by reading From(n) after n rows.
// Row groups before row are not read; rows of the group it falls in
// before it are decoded and dropped. The rows' numbers in callbacks and
// errors stay the file's.
func (p *File) From(row int) *File {
	q := *p
	q.start = min(max(row, 0), p.Rows())
	return &q
}

// Limit is the number of rows a read with limit gives: limit, or all rows
// from the start (From) when limit is 0 or more than are left.
func (p *File) Limit(limit int) int {
	left := p.Rows() - p.start
	if limit <= 0 || limit > left {
		return left
	}
	return limit
}

// Kind is what a column's values are, as far as this package reads them.
type Kind int

const (
	// Other is a column of values read as null (floats, booleans, ...).
	Other Kind = iota
	// String is a BYTE_ARRAY column (string, large_string, binary).
	String
	// Int is an INT32 or INT64 column.
	Int
)

// Column is one leaf column found by name.
type Column struct {
	// Name is the column as asked for ("answer.aliases"), for errors.
	Name string
	// List is whether the column holds a list per row.
	List bool
	// Kind is what its values are.
	Kind Kind

	index    int
	physical parquet.Kind
	// elemDef is the definition level from which a list element is present
	// (null below maxDef).
	elemDef, maxDef int
}

// Describe says what the column holds, for errors: "BYTE_ARRAY", "a list
// of INT64".
func (c Column) Describe() string {
	if c.List {
		return "a list of " + c.physical.String()
	}
	return c.physical.String()
}

// Columns lists the top-level column names, for errors: quoted where a
// name has a character that would not print plainly (the error stays one
// line).
func (p *File) Columns() string {
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

// Has reports whether the file has a top-level column name (matched
// exactly, or else without regard to case).
func (p *File) Has(name string) bool {
	return field(p.f.Schema(), name) != nil
}

// HasField reports whether the file has the column or struct field at
// path ("answer", "aliases"), each name matched as Has matches it.
func (p *File) HasField(path ...string) bool {
	var n parquet.Node = p.f.Schema()
	for _, name := range path {
		fl := field(n, name)
		if fl == nil {
			return false
		}
		n = fl
	}
	return true
}

// field is n's field name, matched exactly or else without regard to case.
func field(n parquet.Node, name string) parquet.Field {
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

// Column finds the leaf column at path (a top-level column, or a struct's
// field: "answer", "aliases"; or a field of a list's struct elements:
// "conversations", "from"). A list's wrapper groups (list/element,
// list/item, array, bag/array_element) are stepped through whatever they are
// named. A column that is not there, is a struct or a list of lists is an
// *Error.
func (p *File) Column(path ...string) (c Column, err error) {
	// A corrupt schema can make parquet-go panic (a group taken for a
	// leaf).
	defer recoverAs(p.name, strings.Join(path, "."), &err)
	c = Column{Name: strings.Join(path, ".")}
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
			c.elemDef = def
		}
	}
	for k, name := range path {
		fl := field(n, name)
		// A list's elements' fields are found through its wrappers
		// ("conversations", "from" in conversations.list.element.from).
		for fl == nil && k > 0 && listWrapper(n) {
			step(n.Fields()[0])
			fl = field(n, name)
		}
		if fl == nil {
			if k == 0 {
				return c, errorf(p.name, "no column %q (the file has: %s)", c.Name, p.Columns())
			}
			return c, errorf(p.name, "column %q has no field %q", strings.Join(path[:k], "."), name)
		}
		step(fl)
	}
	for !n.Leaf() {
		fields := n.Fields()
		if len(fields) != 1 {
			return c, errorf(p.name, "column %q is a struct, want a value or a list", c.Name)
		}
		step(fields[0])
	}
	if reps > 1 {
		return c, errorf(p.name, "column %q is a list of lists", c.Name)
	}
	lc, ok := p.f.Schema().Lookup(names...)
	if !ok {
		return c, errorf(p.name, "column %q: not found in the schema", c.Name)
	}
	c.index, c.physical, c.List, c.maxDef = lc.ColumnIndex, n.Type().Kind(), reps == 1, lc.MaxDefinitionLevel
	switch c.physical {
	case parquet.ByteArray:
		c.Kind = String
	case parquet.Int32, parquet.Int64:
		c.Kind = Int
	}
	return c, nil
}

// listWrapper reports whether n is a list's wrapper group around its
// elements: a group of one group field, itself repeated (LIST's list, the
// legacy array) or in a repeated group (LIST's element).
func listWrapper(n parquet.Node) bool {
	if n.Leaf() || len(n.Fields()) != 1 {
		return false
	}
	fl := n.Fields()[0]
	return !fl.Leaf() && (fl.Repeated() || n.Repeated())
}

// Value is one value read: Str for BYTE_ARRAY (and FIXED_LEN_BYTE_ARRAY)
// columns, Num for integer ones; Null when absent.
type Value struct {
	Str  string
	Num  int64
	Null bool
}

// Values calls row for each of the first limit rows (0: all) of column c
// from the start (From) with the row's number in the file (0-based) and
// its values: one for a value column (Null when absent), the elements for
// a list (none for an empty or null list). An error row returns ends the
// read and is returned. Only the row groups that hold those rows are read.
func (p *File) Values(c Column, limit int, row func(i int, vals []Value) error) error {
	k := p.Cursor(c)
	defer k.Close()
	return k.Next(limit, row)
}

// add appends v to a row's values, copied out of the page's buffers.
func (c Column) add(cur []Value, v parquet.Value) []Value {
	d := v.DefinitionLevel()
	if c.List && d < c.elemDef {
		return cur // an empty or null list
	}
	if d < c.maxDef || v.IsNull() {
		return append(cur, Value{Null: true})
	}
	switch c.physical {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return append(cur, Value{Str: string(v.ByteArray())})
	case parquet.Int32, parquet.Int64:
		return append(cur, Value{Num: v.Int64()})
	}
	return append(cur, Value{Null: true})
}

// Strings reads the string column at path, one value per row of the first
// limit (0: all): "" where null, or where the file lacks the column and
// optional is set. A column of another type, or a value that is not UTF-8,
// is an *Error.
func (p *File) Strings(limit int, optional bool, path ...string) ([]string, error) {
	if optional && !p.Has(path[0]) {
		return make([]string, p.Limit(limit)), nil
	}
	k, err := p.StringCursor(false, path...)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	return k.Strings(limit)
}

// StringLists reads the column of lists of strings at path, one list per
// row of the first limit (0: all; null elements as "", a null list as an
// empty one).
func (p *File) StringLists(limit int, path ...string) ([][]string, error) {
	k, err := p.StringCursor(true, path...)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	return k.StringLists(limit)
}

// StringCursor is a cursor on the string column at path (with list, the
// column of lists of strings), read by its Strings (StringLists); a column
// of another type is an *Error.
func (p *File) StringCursor(list bool, path ...string) (*Cursor, error) {
	c, err := p.Column(path...)
	if err != nil {
		return nil, err
	}
	if c.List != list || c.Kind != String {
		want := "strings"
		if list {
			want = "a list of strings"
		}
		return nil, errorf(p.name, "column %q is %s, want %s", c.Name, c.Describe(), want)
	}
	return p.Cursor(c), nil
}

// Strings reads the next limit rows (0: all left) of a cursor's string
// column, as File.Strings does.
func (k *Cursor) Strings(limit int) ([]string, error) {
	out := make([]string, 0, min(k.left(limit), maxPrealloc))
	err := k.Next(limit, func(i int, vals []Value) error {
		if err := k.checkUTF8(i, vals[0].Str); err != nil {
			return err
		}
		out = append(out, vals[0].Str)
		return nil
	})
	return out, err
}

// StringLists reads the next limit rows (0: all left) of a cursor's column
// of lists of strings, as File.StringLists does.
func (k *Cursor) StringLists(limit int) ([][]string, error) {
	out := make([][]string, 0, min(k.left(limit), maxPrealloc))
	err := k.Next(limit, func(i int, vals []Value) error {
		list := make([]string, len(vals))
		for j, v := range vals {
			if err := k.checkUTF8(i, v.Str); err != nil {
				return err
			}
			list[j] = v.Str
		}
		out = append(out, list)
		return nil
	})
	return out, err
}

// checkUTF8 is an *Error when s, a value of row i (0-based), is not UTF-8.
func (k *Cursor) checkUTF8(i int, s string) error {
	if !utf8.ValidString(s) {
		return errorf(k.p.name, "row %d: column %q is not valid UTF-8", i+1, k.col.Name)
	}
	return nil
}
