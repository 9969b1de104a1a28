package evals

import (
	"bufio"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// maxPageBytes bounds a page's stated uncompressed size (parquet writers
// keep pages near 1 MiB; a corrupt header could claim 2 GiB).
const maxPageBytes = 256 << 20

// checkLZ4 checks each LZ4_RAW page of column index in every row group
// before parquet-go decodes it: parquet-go's LZ4 decoder doubles its
// buffer for as long as a block fails to decode, so a corrupt block would
// grow it without end. Each page is decoded here into a buffer of its
// stated size (at most maxPageBytes); one that does
// not fit, or does not decode, is a DataError naming the column.
func (p *pqFile) checkLZ4(l pqLeaf) error {
	for g, rg := range p.f.Metadata().RowGroups {
		if l.index >= len(rg.Columns) {
			return dataErr(p.name, 0, "column %q: row group %d lacks it", l.name, g+1)
		}
		md := rg.Columns[l.index].MetaData
		if md.Codec != format.Lz4Raw {
			continue
		}
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		if start < 0 || md.TotalCompressedSize < 0 {
			return dataErr(p.name, 0, "column %q: corrupt chunk offsets in row group %d", l.name, g+1)
		}
		r := bufio.NewReader(io.NewSectionReader(p.ra, start, md.TotalCompressedSize))
		if err := p.checkLZ4Pages(l, r); err != nil {
			return err
		}
	}
	return nil
}

// checkLZ4Pages checks the pages of the column chunk r holds.
func (p *pqFile) checkLZ4Pages(l pqLeaf, r *bufio.Reader) error {
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	var src, dst []byte
	for page := 1; ; page++ {
		if _, err := r.Peek(1); err == io.EOF {
			return nil
		}
		var h format.PageHeader
		if err := dec.Decode(&h); err != nil {
			return dataErr(p.name, 0, "column %q: page %d: corrupt page header: %v", l.name, page, err)
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
			return dataErr(p.name, 0, "column %q: page %d: corrupt LZ4 page sizes (%d bytes stated for %d stored)", l.name, page, size, h.CompressedPageSize)
		}
		src = grow(src, int(h.CompressedPageSize))
		if _, err := io.ReadFull(r, src); err != nil {
			return dataErr(p.name, 0, "column %q: page %d: %v", l.name, page, err)
		}
		if levels == int64(h.CompressedPageSize) {
			continue
		}
		dst = grow(dst, int(size-levels))
		if _, err := lz4.UncompressBlock(src[levels:], dst); err != nil {
			return dataErr(p.name, 0, "column %q: page %d: corrupt LZ4 data", l.name, page)
		}
	}
}

// grow is b resized to n bytes, reallocated only when too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
