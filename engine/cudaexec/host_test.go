package cudaexec

import (
	"slices"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

// TestTheHostOpsWorkOnStridedViews: the elementwise ops and the copies
// write exactly the view they are given, strided or dense: Scale, Add and
// Copy on a column range of a wider tensor leave the other columns alone
// and give each element its own result; Embed zeroes only the rows at
// position 0 when asked; GatherRows picks the named rows.
func TestTheHostOpsWorkOnStridedViews(t *testing.T) {
	t.Parallel()
	o := NewHostOps(kernels.Default())
	defer o.Close()
	const rows, cols = 3, 5
	src := make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(i + 1)
	}
	x := o.Alloc(rows, cols)
	o.Upload(x, kernels.NewMat(src, rows, cols))
	view := x.Slice(0, rows, 1, 3) // columns 1 and 2
	o.Scale(view, 2)
	o.Add(view, view, view)
	got := make([]float32, rows*cols)
	o.Download(kernels.NewMat(got, rows, cols), x)
	for i, v := range got {
		want := src[i]
		if c := i % cols; c == 1 || c == 2 {
			want *= 4
		}
		if v != want {
			t.Fatalf("element %d: %v after Scale(2) and Add of columns 1–2, want %v", i, v, want)
		}
	}

	y := o.Alloc(rows, 2)
	o.Copy(y, view)
	o.Embed(x.Slice(0, 2, 0, 2), y, upload(o, []int32{2, 0}), upload(o, []int32{0, 7}), true)
	g := o.Alloc(2, cols)
	o.GatherRows(g, x, upload(o, []int32{1, 0}))
	out := make([]float32, 2*cols)
	o.Download(kernels.NewMat(out, 2, cols), g)
	// x's rows were [1 8 12 4 5] and [6 28 32 9 10]; Embed zeroed the first
	// two columns of row 0 (position 0) and gave row 1 y's row 0 (token 0),
	// [8 12]; GatherRows takes row 1, then row 0.
	want := []float32{8, 12, 32, 9, 10, 0, 0, 12, 4, 5}
	if !slices.Equal(out, want) {
		t.Fatalf("gathered rows %v, want %v", out, want)
	}
}

func upload(o Ops, v []int32) Ints {
	d := o.AllocInts(len(v))
	o.UploadInts(d, v)
	return d
}
