package model

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Tensor is a float32 tensor, row-major.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Numel is the number of elements of a shape.
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// safetensors layout: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}} (offsets relative to
// the data that follows), then the raw little-endian data.
type stEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// maxHeader bounds the JSON header of a safetensors file (the format's own limit is 100 MB).
const maxHeader = 100 << 20

// ReadSafetensors reads every tensor of a safetensors file as float32,
// converting BF16 and F16. It checks that each tensor's bytes lie inside the
// file and match its shape.
func ReadSafetensors(path string) (map[string]Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("%s: no safetensors header: %w", path, err)
	}
	if n == 0 || n > maxHeader || int64(n)+8 > fi.Size() {
		return nil, fmt.Errorf("%s: header length %d does not fit a %d-byte file", path, n, fi.Size())
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	dataStart := int64(8 + n)
	dataLen := fi.Size() - dataStart
	out := make(map[string]Tensor, len(raw))
	names := make([]string, 0, len(raw))
	for name := range raw {
		if name != "__metadata__" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var buf []byte
	for _, name := range names {
		var e stEntry
		if err := json.Unmarshal(raw[name], &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		size := map[string]int64{"F32": 4, "BF16": 2, "F16": 2}[e.DType]
		if size == 0 {
			return nil, fmt.Errorf("%s: tensor %s has dtype %s (want F32, BF16 or F16)", path, name, e.DType)
		}
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("%s: tensor %s has shape %v", path, name, e.Shape)
			}
		}
		count := int64(Numel(e.Shape))
		b, end := e.Offsets[0], e.Offsets[1]
		if b < 0 || end < b || end > dataLen || end-b != count*size {
			return nil, fmt.Errorf("%s: tensor %s: offsets %v do not hold %d×%d bytes within %d", path, name, e.Offsets, count, size, dataLen)
		}
		if cap(buf) < int(end-b) {
			buf = make([]byte, end-b)
		}
		buf = buf[:end-b]
		if _, err := f.ReadAt(buf, dataStart+b); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		data := make([]float32, count)
		switch e.DType {
		case "F32":
			for i := range data {
				data[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
			}
		case "BF16":
			for i := range data {
				data[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
			}
		case "F16":
			for i := range data {
				data[i] = halfToFloat(binary.LittleEndian.Uint16(buf[2*i:]))
			}
		}
		out[name] = Tensor{Shape: slices.Clone(e.Shape), Data: data}
	}
	return out, nil
}

// halfToFloat converts an IEEE 754 half to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// WriteSafetensors writes tensors as F32, names sorted, with the header
// padded to 8 bytes as the format recommends.
func WriteSafetensors(path string, tensors map[string]Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, n := range names {
		t := tensors[n]
		if Numel(t.Shape) != len(t.Data) {
			return fmt.Errorf("tensor %s: shape %v holds %d elements, data %d", n, t.Shape, Numel(t.Shape), len(t.Data))
		}
		size := int64(4 * len(t.Data))
		hdr[n] = stEntry{DType: "F32", Shape: t.Shape, Offsets: [2]int64{off, off + size}}
		off += size
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	binary.Write(w, binary.LittleEndian, uint64(len(hb)))
	w.Write(hb)
	var b [4]byte
	for _, n := range names {
		for _, v := range tensors[n].Data {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			w.Write(b[:])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
