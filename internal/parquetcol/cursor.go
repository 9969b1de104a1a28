package parquetcol

import (
	"errors"
	"io"

	"github.com/parquet-go/parquet-go"
)

// Cursor reads one column's rows in order from the start (From), a batch
// at a time (Next), each row decoded once: a read From(n) decodes again
// the rows of n's row group before n, which for a file of one row group
// of a million rows (as pandas writes it) read in batches is most of the
// work. Close releases what it holds.
type Cursor struct {
	p     *File
	col   Column
	total int // rows from the start to read in all
	last  int // the row groups to read end before last
	g     int // the next row group to open
	pages parquet.Pages
	check *pageCheck
	// page is the page being read (nil: none), vr its values, buf[bi:bn]
	// those read from vr and not yet gathered; done when vr is spent.
	page   parquet.Page
	vr     parquet.ValueReader
	buf    []parquet.Value
	bi, bn int
	done   bool
	rows
}

// rows gathers one column's values into rows: a value of repetition level
// 0 starts a row, which never spans row groups but may span pages.
type rows struct {
	limit   int // rows to have handed to row when Next returns
	row     func(i int, vals []Value) error
	skip    int // rows to drop before the first handed to row
	n       int // rows handed to row
	cur     []Value
	started bool // cur holds a row begun
}

// Cursor is a cursor on column c from the start (From).
func (p *File) Cursor(c Column) *Cursor {
	total := p.Limit(0)
	first, last, skip := p.groups(total)
	return &Cursor{p: p, col: c, total: total, g: first, last: last, rows: rows{skip: skip}}
}

// Next calls row for each of the next limit rows (0: all that are left),
// as Values does.
func (k *Cursor) Next(limit int, row func(i int, vals []Value) error) (err error) {
	defer recoverAs(k.p.name, k.col.Name, &err)
	k.row = row
	k.limit = k.n + k.left(limit)
	for k.n < k.limit {
		switch {
		case k.page != nil:
			err = k.values()
		case k.pages != nil:
			err = k.nextPage()
		case k.g < k.last:
			err = k.open()
		default:
			return errorf(k.p.name, "column %q has %d rows, the file says %d", k.col.Name, k.p.start+k.n, k.p.start+k.limit)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// left is the number of rows Next(limit) reads.
func (k *Cursor) left(limit int) int {
	if limit <= 0 || limit > k.total-k.n {
		return k.total - k.n
	}
	return limit
}

// open opens the next row group's chunk of the column.
func (k *Cursor) open() error {
	check, err := k.p.checkPages(k.col, k.g)
	if err != nil {
		return err
	}
	k.check, k.pages = check, k.p.f.RowGroups()[k.g].ColumnChunks()[k.col.index].Pages()
	k.g++
	return nil
}

// nextPage reads the open chunk's next page, checked first; at its end it
// closes the chunk and hands its last row to row.
func (k *Cursor) nextPage() error {
	if k.check != nil {
		if err := k.check.next(); err != nil {
			return err
		}
	}
	page, err := k.pages.ReadPage()
	if errors.Is(err, io.EOF) {
		k.pages.Close()
		k.pages, k.check = nil, nil
		return k.flush()
	}
	if err != nil {
		return errorf(k.p.name, "column %q: %v", k.col.Name, err)
	}
	if k.buf == nil {
		k.buf = make([]parquet.Value, 512)
	}
	k.page, k.vr, k.bi, k.bn, k.done = page, page.Values(), 0, 0, false
	return nil
}

// values gathers the page's values into rows until limit rows are handed
// to row (the value starting the next row is kept for the next call) or
// the page is spent, and then releases it.
func (k *Cursor) values() error {
	for {
		for ; k.bi < k.bn; k.bi++ {
			v := k.buf[k.bi]
			if v.RepetitionLevel() == 0 {
				if err := k.flush(); err != nil {
					return err
				}
				if k.n == k.limit {
					return nil
				}
				k.started, k.cur = true, k.cur[:0]
			}
			k.cur = k.col.add(k.cur, v)
		}
		if k.done {
			parquet.Release(k.page)
			k.page, k.vr = nil, nil
			return nil
		}
		n, err := k.vr.ReadValues(k.buf)
		k.bi, k.bn = 0, n
		if errors.Is(err, io.EOF) {
			k.done = true
		} else if err != nil {
			return errorf(k.p.name, "column %q: %v", k.col.Name, err)
		}
	}
}

// flush hands the row begun, if any, to row (or drops it, while rows
// before the start are left to skip).
func (k *Cursor) flush() error {
	if !k.started {
		return nil
	}
	k.started = false
	if k.skip > 0 {
		k.skip--
		return nil
	}
	k.n++
	return k.row(k.p.start+k.n-1, k.cur)
}

// Close releases the page and chunk the cursor holds.
func (k *Cursor) Close() {
	if k.page != nil {
		parquet.Release(k.page)
		k.page = nil
	}
	if k.pages != nil {
		k.pages.Close()
		k.pages = nil
	}
}

// groups is the row groups [first, last) that hold the limit rows from
// p.start, and how many rows of the first come before p.start.
func (p *File) groups(limit int) (first, last, skip int) {
	rgs := p.f.RowGroups()
	base := 0
	first, last = len(rgs), len(rgs)
	for g, rg := range rgs {
		n := int(rg.NumRows())
		if first == len(rgs) && base+n > p.start {
			first, skip = g, p.start-base
		}
		if base >= p.start+limit {
			last = g
			break
		}
		base += n
	}
	return min(first, last), last, skip
}
