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

// checkPages checks each LZ4_RAW, ZSTD or SNAPPY page of column l in
// row groups [first, last) before parquet-go decodes it, since parquet-go's
// decoders trust a corrupt page: its LZ4 decoder doubles its buffer for as
// long as a block fails to decode, without end, zstd allocates what a frame
// header states (up to 64 GiB), snappy what a block states (up to 4 GiB).
// An LZ4 page is decoded here into a buffer of its page header's stated
// size (at most maxPageBytes); a zstd page's frame or a snappy block may
// state no more than that size. A page that fails is an *Error naming
// the column.
func (p *File) checkPages(l Column, first, last int) error {
	groups := p.f.Metadata().RowGroups
	for g := first; g < last && g < len(groups); g++ {
		rg := groups[g]
		if l.index >= len(rg.Columns) {
			return errorf(p.name, "column %q: row group %d lacks it", l.Name, g+1)
		}
		md := rg.Columns[l.index].MetaData
		if md.Codec != format.Lz4Raw && md.Codec != format.Zstd && md.Codec != format.Snappy {
			continue
		}
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		if start < 0 || md.TotalCompressedSize < 0 {
			return errorf(p.name, "column %q: corrupt chunk offsets in row group %d", l.Name, g+1)
		}
		r := bufio.NewReader(io.NewSectionReader(p.ra, start, md.TotalCompressedSize))
		if err := p.checkChunkPages(l, md.Codec, r); err != nil {
			return err
		}
	}
	return nil
}

// checkChunkPages checks the pages of the column chunk r holds.
func (p *File) checkChunkPages(l Column, codec format.CompressionCodec, r *bufio.Reader) error {
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	var src, dst []byte
	for page := 1; ; page++ {
		if _, err := r.Peek(1); err == io.EOF {
			return nil
		}
		var h format.PageHeader
		if err := dec.Decode(&h); err != nil {
			return errorf(p.name, "column %q: page %d: corrupt page header: %v", l.Name, page, err)
		}
		size, levels := int64(h.UncompressedPageSize), int64(0)
		if v2 := h.DataPageHeaderV2; v2.Valid {
			if v2.V.IsCompressed.Valid && !v2.V.IsCompressed.V {
				levels = int64(h.CompressedPageSize) // stored as it is
			} else {
				levels = int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
			}
		}
		if h.CompressedPageSize < 0 || size < 0 || levels < 0 || levels > int64(h.CompressedPageSize) || levels > size || size > maxPageBytes {
			return errorf(p.name, "column %q: page %d: corrupt page sizes (%d bytes stated for %d stored)", l.Name, page, size, h.CompressedPageSize)
		}
		src = grow(src, int(h.CompressedPageSize))
		if _, err := io.ReadFull(r, src); err != nil {
			return errorf(p.name, "column %q: page %d: %v", l.Name, page, err)
		}
		if levels == int64(h.CompressedPageSize) {
			continue
		}
		switch codec {
		case format.Zstd:
			if n, ok := zstdFrameSize(src[levels:]); ok && n > uint64(size-levels) {
				return errorf(p.name, "column %q: page %d: corrupt zstd data (%d bytes stated for a %d-byte page)", l.Name, page, n, size-levels)
			}
			continue
		case format.Snappy:
			// A snappy block starts with its length, which the decoder
			// allocates (up to 4 GiB).
			if n, k := binary.Uvarint(src[levels:]); k <= 0 || n > uint64(size-levels) {
				return errorf(p.name, "column %q: page %d: corrupt snappy data (%d bytes stated for a %d-byte page)", l.Name, page, n, size-levels)
			}
			continue
		}
		dst = grow(dst, int(size-levels))
		if _, err := lz4.UncompressBlock(src[levels:], dst); err != nil {
			return errorf(p.name, "column %q: page %d: corrupt LZ4 data", l.Name, page)
		}
	}
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
