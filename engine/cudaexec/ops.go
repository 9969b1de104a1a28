// Package cudaexec runs the reference model's forward pass as a list of
// operations (Ops) over tensors that live in an Ops' own memory: the GPU's
// (OpenDevice, through internal/cuda: purego, the driver API and NVRTC, no
// cgo), the host's (NewHostOps: the CPU kernels, matching model.Forward bit
// for bit), or the kernel emulator's (the CUDA C source run on the CPU, for
// tests without a GPU). The Executor drives the op list for the scheduler
// (sched.Executor, sched.SpecExecutor); the weights, activations and KV
// values stay in the Ops' memory and only tokens, positions, slots, logits
// and final hidden rows cross to the host.
package cudaexec

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// Mem is one allocation in an Ops' memory; its elements are float32 or
// int32 (Kind). What it is (a host slice, a device address, an emulator
// buffer id) is the Ops' own business.
type Mem interface {
	// Len is the allocation's size in elements.
	Len() int
}

// Tensor is a row-major float32 matrix view into a Mem: element (i, j) is
// element Off + i·Stride + j of the allocation, as kernels.Mat names Data.
type Tensor struct {
	Mem        Mem
	Off        int
	Rows, Cols int
	Stride     int // ≥ Cols
}

// Slice returns the view of rows [r0, r1) and columns [c0, c1) of t.
func (t Tensor) Slice(r0, r1, c0, c1 int) Tensor {
	if r0 < 0 || r1 < r0 || r1 > t.Rows || c0 < 0 || c1 < c0 || c1 > t.Cols {
		panic(fmt.Sprintf("cudaexec: Slice [%d:%d, %d:%d] of a %d×%d tensor", r0, r1, c0, c1, t.Rows, t.Cols))
	}
	return Tensor{Mem: t.Mem, Off: t.Off + r0*t.Stride + c0, Rows: r1 - r0, Cols: c1 - c0, Stride: t.Stride}
}

// RowRange returns rows [r0, r1) of t, every column.
func (t Tensor) RowRange(r0, r1 int) Tensor { return t.Slice(r0, r1, 0, t.Cols) }

// Ints is an int32 vector view into a Mem: elements Off … Off+Len−1.
type Ints struct {
	Mem Mem
	Off int
	Len int
}

// Slice returns elements [a, b) of v.
func (v Ints) Slice(a, b int) Ints {
	if a < 0 || b < a || b > v.Len {
		panic(fmt.Sprintf("cudaexec: Slice [%d:%d] of %d ints", a, b, v.Len))
	}
	return Ints{Mem: v.Mem, Off: v.Off + a, Len: b - a}
}

// Rope is a rotary table in an Ops' memory: Cos and Sin are MaxPos × Dim/2
// (kernels.Rope's tables); Ref is the host table it came from.
type Rope struct {
	Ref      *kernels.Rope
	Cos, Sin Tensor
}

// KVLayer is one layer's share of the paged KV pool: MLA holds per slot
// [c | k_rope] (Slots × (Rank+RopeDim)), Index the indexer keys transposed
// (IndexDim × Slots), as model.KVCache lays them out.
type KVLayer struct {
	MLA, Index Tensor
	Rank       int // kv_lora_rank: the latent c, the first Rank columns of MLA
}

// Batch is a forward pass's rows, in both memories: row t (of T) belongs
// to sequence RowSeq[t] at position RowPos[t] and writes KV slot
// RowSlot[t]; sequence j's slots for positions 0, 1, … are
// SeqSlots[SeqOff[j] : SeqOff[j+1]]. Host holds the same lists in host
// memory (and the sequences themselves) for Ops that run on the host.
//
// MaxVisible, when > 0, is a bound on every row's visible keys (position
// + 1) that the ops size their data-dependent grids and scratch by instead
// of the rows' positions: a graph's batch, whose positions change between
// replays (the Executor's decode graphs); SeqSlots.Len is then the
// list's capacity, the sequences' lists lying where SeqOff says.
type Batch struct {
	T                       int
	RowSeq, RowPos, RowSlot Ints
	SeqSlots, SeqOff        Ints
	MaxVisible              int
	Host                    HostBatch
}

// HostBatch is a Batch's lists in host memory.
type HostBatch struct {
	RowSeq, RowPos, RowSlot []int32
	SeqSlots, SeqOff        []int32
	// Seqs are the sequences (their Tokens, Pos and Slots), for host Ops.
	Seqs []SeqView
}

// SeqView is one sequence of a batch: its new tokens start at Pos and
// Slots holds the slot of every position up to the last new one.
type SeqView struct {
	N     int // new tokens
	Pos   int
	Slots []int32
}

// Selection is, per batch row t, the KV slots its attention reads:
// Picked[t·TopK : t·TopK+Count[t]], in position order. A row at position p
// with p+1 ≤ TopK reads every slot of positions 0…p (dense causal
// attention); a later row reads the indexer's TopK best (DSA), among equal
// scores the earlier positions first.
type Selection struct {
	Picked, Count Ints
	TopK          int
}

// MLP is a SiLU-gated MLP's three Linears in an Ops' memory (I×H, I×H, H×I).
type MLP struct{ Gate, Up, Down Tensor }

// Experts are a MoE layer's routed experts stacked: expert e's gate and up
// are rows [e·Inter, (e+1)·Inter) of Gate and Up (each (N·Inter) × H), its
// down rows [e·H, (e+1)·H) of Down ((N·H) × Inter).
type Experts struct {
	Gate, Up, Down Tensor
	N, Inter       int
}

// Routing is the router's choice for T rows: row t's experts are
// Idx[t·K : (t+1)·K] with weights W (T × K), highest-scoring first.
type Routing struct {
	Idx Ints
	W   Tensor
	K   int
}

// RouteConfig is noaux_tc's settings (model.Config's names).
type RouteConfig struct {
	Groups, TopKGroup, K int
	Scaling              float32
	NormTopK             bool
}

// Ops is the model's forward pass cut into the operations a GPU runs as
// kernels. Each op's meaning is the CPU kernel's (kernels.Backend) or the
// model's (engine/model) it names; shapes are checked and a mismatch
// panics (a programming error). Ops queue work in order; Download waits
// for it. A device failure is sticky: Err reports the first one and every
// later op does nothing. No output tensor aliases an input unless the op
// says so. Every op is batch-invariant: a row's result does not depend on
// the other rows of its batch.
type Ops interface {
	// Name says what runs the ops, e.g. "host cpu-avx2" or "cuda:0 NVIDIA H200 sm_90".
	Name() string

	// Alloc returns a zeroed rows × cols tensor; AllocInts n zeroed int32s.
	Alloc(rows, cols int) Tensor
	AllocInts(n int) Ints
	// Free releases an allocation (of Alloc, AllocInts or UploadRope).
	Free(m Mem)
	// Upload copies src into dst (same shape); UploadInts src into dst (same length).
	Upload(dst Tensor, src kernels.Mat)
	UploadInts(dst Ints, src []int32)
	// UploadRope copies a rotary table.
	UploadRope(r *kernels.Rope) Rope
	// Download copies src into dst (same shape) once the work before it is
	// done; DownloadInts likewise.
	Download(dst kernels.Mat, src Tensor)
	DownloadInts(dst []int32, src Ints)
	// Err is the first failure, nil if none.
	Err() error
	// Close releases every allocation and the device.
	Close() error

	// Embed sets row t of dst to row tokens[t] of table; with zeroAtPos0, a
	// row whose pos[t] is 0 is zeros instead (the MTP layer's input).
	Embed(dst, table Tensor, tokens, pos Ints, zeroAtPos0 bool)
	// MatMulT sets dst = x · wᵀ (kernels.Backend.MatMulT).
	MatMulT(dst, x, w Tensor)
	// MatMul sets dst = x · w (kernels.Backend.MatMul).
	MatMul(dst, x, w Tensor)
	// RMSNorm and LayerNorm are kernels.Backend's; w and b are 1 × x.Cols.
	RMSNorm(dst, x, w Tensor, eps float32)
	LayerNorm(dst, x, w, b Tensor, eps float32)
	// RoPE rotates each row of x (x.Cols == rope dim) in place by pos[row].
	RoPE(x Tensor, pos Ints, r Rope)
	// Scale sets x *= alpha in place.
	Scale(x Tensor, alpha float32)
	// Add sets dst = a + b; dst may be a.
	Add(dst, a, b Tensor)
	// Copy sets dst = src.
	Copy(dst, src Tensor)
	// GatherRows sets row i of dst to row rows[i] of src.
	GatherRows(dst, src Tensor, rows Ints)
	// WriteKV writes batch row t's cache entries into slot slots[t] of kv:
	// MLA [c_t | kpe_t], and ik_t into the slot's column of Index.
	WriteKV(kv KVLayer, c, kpe, ik Tensor, slots Ints)
	// SelectKeys fills sel for the batch's rows: dense rows their visible
	// slots; the others the TopK slots of highest indexer score
	// I(t,s) = Σ_h iw[t,h] · max(iq[t,h] · k_s, 0) over the visible keys
	// (model's selectKeys; iq is T × heads·dim, iw T × heads, heads = iw.Cols).
	SelectKeys(sel Selection, kv KVLayer, iq, iw Tensor, b Batch)
	// Attend is absorbed MLA's attention: for row t and head h, query
	// qt[t, h·dk : (h+1)·dk] (dk = kv.MLA.Cols) over the selected slots'
	// MLA rows as keys and their first Rank columns as values, softmax of
	// scale · q·k, into o[t, h·Rank : (h+1)·Rank] (kernels' GatherAttention).
	Attend(o, qt Tensor, kv KVLayer, sel Selection, heads int, scale float32)
	// SwiGLU sets dst = (silu(x·gateᵀ) ⊙ (x·upᵀ)) · downᵀ (kernels.Backend.SwiGLU).
	SwiGLU(dst, x Tensor, mlp MLP)
	// Sigmoid sets dst = 1 / (1 + e^−x).
	Sigmoid(dst, x Tensor)
	// Route fills r from the router's sigmoid scores (T × N experts) and
	// the correction bias (1 × N), as the model's noaux_tc route does.
	Route(r Routing, scores, bias Tensor, rc RouteConfig)
	// Experts sets row t·K+i of results (T·K × H) to expert r.Idx[t·K+i]'s
	// SwiGLU of row t of xn.
	Experts(results, xn Tensor, ex Experts, r Routing)
	// Combine adds to row t of out Σ_i r.W[t,i] · results[t·K+i], i in
	// order, each product rounded before its sum (kernels' AddScaled).
	Combine(out, results Tensor, r Routing)
}

// uploadRope is UploadRope over any Ops: the tables into two new tensors.
func uploadRope(o Ops, r *kernels.Rope) Rope {
	cos, sin := r.Tables()
	half := r.Dim / 2
	out := Rope{Ref: r, Cos: o.Alloc(r.MaxPos, half), Sin: o.Alloc(r.MaxPos, half)}
	o.Upload(out.Cos, kernels.NewMat(cos, r.MaxPos, half))
	o.Upload(out.Sin, kernels.NewMat(sin, r.MaxPos, half))
	return out
}
