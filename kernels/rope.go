package kernels

import (
	"fmt"
	"math"
)

// Rope holds the tables of rotary position embedding for Dim features and
// positions [0, MaxPos): pair j of a row at position p is rotated by the
// angle p·θ^(−2j/Dim), the "default" rope of Hugging Face (no YaRN). The
// tables are computed once so that RoPE does no trigonometry.
type Rope struct {
	Dim, MaxPos int
	Theta       float64
	cos, sin    []float32 // [MaxPos × Dim/2]
}

// NewRope builds the tables for an even dim. As in Hugging Face, the inverse
// frequencies and the angles are float32 products, so the rotation matches
// a PyTorch float32 reference to within the rounding of cos and sin.
func NewRope(dim, maxPos int, theta float64) *Rope {
	if dim <= 0 || dim%2 != 0 || maxPos <= 0 || theta <= 1 {
		panic(fmt.Sprintf("kernels: NewRope(%d, %d, %v): need an even dim > 0, maxPos > 0, theta > 1", dim, maxPos, theta))
	}
	half := dim / 2
	inv := make([]float32, half)
	for j := range inv {
		inv[j] = float32(1 / math.Pow(theta, float64(float32(2*j)/float32(dim))))
	}
	r := &Rope{Dim: dim, MaxPos: maxPos, Theta: theta,
		cos: make([]float32, maxPos*half), sin: make([]float32, maxPos*half)}
	for p := range maxPos {
		for j, f := range inv {
			a := float64(float32(p) * f)
			r.cos[p*half+j] = float32(math.Cos(a))
			r.sin[p*half+j] = float32(math.Sin(a))
		}
	}
	return r
}

// RoPE rotates each row i of x in place by position pos[i], pairing
// interleaved features (x[2j], x[2j+1]) as GLM-5's MLA and indexer do
// (rope_interleave). Hugging Face de-interleaves q and k before its
// half-split rotation instead; both give the same q·k, which is all
// attention uses. x.Cols must equal r.Dim; to rotate the rope part of
// several heads, call it once per head with a strided view.
func (c *CPU) RoPE(x Mat, pos []int32, r *Rope) {
	x.check("RoPE")
	if x.Cols != r.Dim || len(pos) != x.Rows {
		panic(fmt.Sprintf("kernels: RoPE: x %d×%d, %d positions, rope dim %d do not match", x.Rows, x.Cols, len(pos), r.Dim))
	}
	half := r.Dim / 2
	for i, p := range pos {
		if p < 0 || int(p) >= r.MaxPos {
			panic(fmt.Sprintf("kernels: RoPE: position %d outside [0, %d)", p, r.MaxPos))
		}
		row := x.Row(i)
		cs, sn := r.cos[int(p)*half:][:half], r.sin[int(p)*half:][:half]
		for j := range half {
			a, b := row[2*j], row[2*j+1]
			row[2*j] = float32(a*cs[j]) - float32(b*sn[j])
			row[2*j+1] = float32(a*sn[j]) + float32(b*cs[j])
		}
	}
}

// Tables returns the rotation's cos and sin tables, MaxPos × Dim/2 each
// (pair j at position p is element p·Dim/2 + j), for a device that rotates
// with the same values. The caller must not modify them.
func (r *Rope) Tables() (cos, sin []float32) { return r.cos, r.sin }
