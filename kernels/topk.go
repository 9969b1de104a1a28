package kernels

import "fmt"

// TopK writes the indices of the k = len(idx) largest elements of x into
// idx, largest first, and their values into val unless val is nil. The order
// is total, so the result is deterministic: a larger value first, equal
// values (−0 equals +0) by lower index, and NaN below every number. k must
// not exceed len(x).
//
// It keeps a min-heap of the best k seen (its root is the worst of them), so
// most elements cost one comparison; then it heap-sorts the k in place.
func (c *CPU) TopK(idx []int32, val []float32, x []float32) {
	k := len(idx)
	if k > len(x) || (val != nil && len(val) != k) {
		panic(fmt.Sprintf("kernels: TopK: k = %d of %d elements with %d values", k, len(x), len(val)))
	}
	if k == 0 {
		return
	}
	h := topHeap{idx: idx, x: x}
	for i := range k {
		idx[i] = int32(i)
		h.up(i)
	}
	for i := k; i < len(x); i++ {
		if h.before(int32(i), idx[0]) {
			idx[0] = int32(i)
			h.down(0, k)
		}
	}
	// Heap sort: moving the worst to the end each time leaves the best first.
	for n := k - 1; n > 0; n-- {
		idx[0], idx[n] = idx[n], idx[0]
		h.down(0, n)
	}
	for i := range val {
		val[i] = x[idx[i]]
	}
}

// topHeap is a binary heap of indices into x whose root is the index that
// ranks last.
type topHeap struct {
	idx []int32
	x   []float32
}

// before reports whether element a ranks ahead of element b.
func (h topHeap) before(a, b int32) bool {
	va, vb := h.x[a], h.x[b]
	aNaN, bNaN := va != va, vb != vb
	switch {
	case aNaN || bNaN:
		if aNaN && bNaN {
			return a < b
		}
		return bNaN
	case va != vb:
		return va > vb
	}
	return a < b
}

func (h topHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(h.idx[p], h.idx[i]) {
			return
		}
		h.idx[p], h.idx[i] = h.idx[i], h.idx[p]
		i = p
	}
}

func (h topHeap) down(i, n int) {
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		worst := l
		if r := l + 1; r < n && h.before(h.idx[l], h.idx[r]) {
			worst = r
		}
		if !h.before(h.idx[i], h.idx[worst]) {
			return
		}
		h.idx[i], h.idx[worst] = h.idx[worst], h.idx[i]
		i = worst
	}
}

// FilterGE writes every x[i] ≥ thr (NaN never passes), in order, into vals
// and its index i into idx, and returns how many passed. vals and idx hold at
// least len(x) elements. It is the cheap first pass of an exact top-k: keep
// what can make the cut, then select among few.
func (c *CPU) FilterGE(vals []float32, idx []int32, x []float32, thr float32) int {
	n := len(x)
	if len(vals) < n || len(idx) < n {
		panic(fmt.Sprintf("kernels: FilterGE: %d elements into vals [%d], idx [%d]", n, len(vals), len(idx)))
	}
	if n == 0 {
		return 0
	}
	if c.path == PathAVX512 {
		return filterGEAVX512(&vals[0], &idx[0], &x[0], n, thr)
	}
	k := 0
	for i, v := range x {
		if v >= thr {
			vals[k], idx[k] = v, int32(i)
			k++
		}
	}
	return k
}
