package kernels

import "fmt"

// Mat is a row-major view of a float32 matrix with Rows × Cols elements:
// element (i, j) is Data[i*Stride+j]. A Stride larger than Cols lets a Mat
// name a column range of a wider buffer (one attention head's slice of the
// query rows, say) without copying.
type Mat struct {
	Data       []float32
	Rows, Cols int
	Stride     int // elements between the starts of consecutive rows, ≥ Cols
}

// NewMat views data as a dense rows × cols matrix (Stride = cols).
// It panics if data holds fewer than rows*cols elements.
func NewMat(data []float32, rows, cols int) Mat {
	m := Mat{Data: data, Rows: rows, Cols: cols, Stride: cols}
	m.check("NewMat")
	return m
}

// Row returns row i as a slice of Cols elements sharing m's storage.
func (m Mat) Row(i int) []float32 {
	return m.Data[i*m.Stride : i*m.Stride+m.Cols]
}

// Slice returns the view of rows [r0, r1) and columns [c0, c1) of m.
func (m Mat) Slice(r0, r1, c0, c1 int) Mat {
	if r0 < 0 || r1 < r0 || r1 > m.Rows || c0 < 0 || c1 < c0 || c1 > m.Cols {
		panic(fmt.Sprintf("kernels: Slice [%d:%d, %d:%d] of a %d×%d matrix", r0, r1, c0, c1, m.Rows, m.Cols))
	}
	if r1 == r0 || c1 == c0 {
		return Mat{Rows: r1 - r0, Cols: c1 - c0, Stride: m.Stride}
	}
	off := r0*m.Stride + c0
	end := (r1-1)*m.Stride + c1
	return Mat{Data: m.Data[off:end], Rows: r1 - r0, Cols: c1 - c0, Stride: m.Stride}
}

// check panics unless m's Data covers every element it names. The assembly
// kernels read through raw pointers, so this check is what keeps them inside
// the slice.
func (m Mat) check(op string) {
	if m.Rows < 0 || m.Cols < 0 || m.Stride < m.Cols {
		panic(fmt.Sprintf("kernels: %s: bad matrix shape %d×%d, stride %d", op, m.Rows, m.Cols, m.Stride))
	}
	if m.Rows == 0 || m.Cols == 0 {
		return
	}
	if need := (m.Rows-1)*m.Stride + m.Cols; len(m.Data) < need {
		panic(fmt.Sprintf("kernels: %s: %d×%d matrix with stride %d needs %d elements, has %d",
			op, m.Rows, m.Cols, m.Stride, need, len(m.Data)))
	}
}
