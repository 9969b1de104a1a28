package parquetcol

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// maxPageBytes bounds a page's stated uncompressed size (parquet writers
// keep pages near 1 MiB; a corrupt header could claim 2 GiB).
const maxPageBytes = 256 << 20

// pageCheck checks each LZ4_RAW, ZSTD or SNAPPY page of a column chunk
// before parquet-go decodes it, since parquet-go's decoders trust a corrupt
// page: its LZ4 decoder doubles its buffer for as long as a block fails to
// decode, without end, zstd allocates what a frame header states (up to
// 64 GiB), snappy what a block states (up to 4 GiB). An LZ4 page is decoded
// here into a buffer of its page header's stated size (at most
// maxPageBytes); a zstd page's frame or a snappy block may state no more
// than that size. A page that fails is an *Error naming the column. Pages
// are checked as parquet-go comes to them (next), so a read of a group's
// first rows reads no more of the file than parquet-go does.
type pageCheck struct {
	p        *File
	l        Column
	codec    format.CompressionCodec
	r        *bufio.Reader
	dec      *thrift.Decoder
	src, dst []byte
	page     int
}

// checkPages is the check of column l's chunk in row group g, nil when
// its codec needs none.
func (p *File) checkPages(l Column, g int) (*pageCheck, error) {
	groups := p.f.Metadata().RowGroups
	if g >= len(groups) {
		return nil, nil
	}
	if l.index >= len(groups[g].Columns) {
		return nil, errorf(p.name, "column %q: row group %d lacks it", l.Name, g+1)
	}
	md := groups[g].Columns[l.index].MetaData
	if md.Codec != format.Lz4Raw && md.Codec != format.Zstd && md.Codec != format.Snappy {
		return nil, nil
	}
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	if start < 0 || md.TotalCompressedSize < 0 {
		return nil, errorf(p.name, "column %q: corrupt chunk offsets in row group %d", l.Name, g+1)
	}
	r := bufio.NewReader(io.NewSectionReader(p.ra, start, md.TotalCompressedSize))
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	return &pageCheck{p: p, l: l, codec: md.Codec, r: r, dec: dec}, nil
}

// next checks the chunk's pages up to and including its next data page
// (a dictionary page comes before the first), the page parquet-go reads
// next; at the chunk's end it does nothing.
func (c *pageCheck) next() error {
	for {
		if _, err := c.r.Peek(1); err == io.EOF {
			return nil
		}
		c.page++
		var h format.PageHeader
		if err := c.dec.Decode(&h); err != nil {
			return errorf(c.p.name, "column %q: page %d: corrupt page header: %v", c.l.Name, c.page, err)
		}
		if err := c.check(&h); err != nil {
			return err
		}
		if h.Type == format.DataPage || h.Type == format.DataPageV2 {
			return nil
		}
	}
}

// check checks the page whose header is h, reading its data.
func (c *pageCheck) check(h *format.PageHeader) error {
	l, page := c.l, c.page
	size, levels := int64(h.UncompressedPageSize), int64(0)
	if v2 := h.DataPageHeaderV2; v2.Valid {
		if v2.V.IsCompressed.Valid && !v2.V.IsCompressed.V {
			levels = int64(h.CompressedPageSize) // stored as it is
		} else {
			levels = int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
		}
	}
	if h.CompressedPageSize < 0 || size < 0 || levels < 0 || levels > int64(h.CompressedPageSize) || levels > size || size > maxPageBytes {
		return errorf(c.p.name, "column %q: page %d: corrupt page sizes (%d bytes stated for %d stored)", l.Name, page, size, h.CompressedPageSize)
	}
	c.src = grow(c.src, int(h.CompressedPageSize))
	src := c.src
	if _, err := io.ReadFull(c.r, src); err != nil {
		return errorf(c.p.name, "column %q: page %d: %v", l.Name, page, err)
	}
	if levels == int64(h.CompressedPageSize) {
		return nil
	}
	switch c.codec {
	case format.Zstd:
		if n, ok := zstdFrameSize(src[levels:]); ok && n > uint64(size-levels) {
			return errorf(c.p.name, "column %q: page %d: corrupt zstd data (%d bytes stated for a %d-byte page)", l.Name, page, n, size-levels)
		}
		return nil
	case format.Snappy:
		// A snappy block starts with its length, which the decoder
		// allocates (up to 4 GiB).
		if n, k := binary.Uvarint(src[levels:]); k <= 0 || n > uint64(size-levels) {
			return errorf(c.p.name, "column %q: page %d: corrupt snappy data (%d bytes stated for a %d-byte page)", l.Name, page, n, size-levels)
		}
		return nil
	}
	c.dst = grow(c.dst, int(size-levels))
	if _, err := lz4.UncompressBlock(src[levels:], c.dst); err != nil {
		return errorf(c.p.name, "column %q: page %d: corrupt LZ4 data", l.Name, page)
	}
	return nil
}

// zstdFrameSize is the content size a zstd frame's header states, and
// whether b starts with a frame header that states one (RFC 8878 3.1.1).
func zstdFrameSize(b []byte) (uint64, bool) {
	if len(b) < 5 || binary.LittleEndian.Uint32(b) != 0xFD2FB528 {
		return 0, false
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	at := 5
	if !single {
		at++ // the window descriptor
	}
	at += []int{0, 1, 2, 4}[fhd&3] // the dictionary ID
	var n int
	switch fhd >> 6 {
	case 0:
		if single {
			n = 1
		}
	case 1:
		n = 2
	case 2:
		n = 4
	case 3:
		n = 8
	}
	if n == 0 || len(b) < at+n {
		return 0, false
	}
	var v [8]byte
	copy(v[:], b[at:at+n])
	size := binary.LittleEndian.Uint64(v[:])
	if n == 2 {
		size += 256
	}
	return size, true
}

// grow is b resized to n bytes, reallocated only when too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
