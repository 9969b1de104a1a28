package cudaexec

import (
	"errors"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// CONTRACT STUB (owner: the executor's author, who deletes this file).

// Executor runs the model's forward pass (and its MTP drafter) as the op
// list over an Ops, for the scheduler: sched.Executor and
// sched.SpecExecutor. The weights and the KV values live in the Ops'
// memory; Pool is the page bookkeeping alone. A device failure is fatal:
// Forward panics with the Ops' error.
type Executor struct {
	kv *model.KVCache
}

// NewExecutor uploads w into ops and allocates a KV pool of pages·pageSize
// slots for cfg's main layers, and its MTP layer too when mtp is set.
func NewExecutor(cfg *model.Config, w *model.Weights, ops Ops, pages, pageSize int, mtp bool) (*Executor, error) {
	return nil, errors.New("cudaexec: the executor is not built yet")
}

// Forward implements sched.Executor.
func (e *Executor) Forward(seqs []model.Seq) *model.Output { panic("not built") }

// Pool implements sched.Executor.
func (e *Executor) Pool() *model.KVCache { return e.kv }

// Draft implements sched.SpecExecutor.
func (e *Executor) Draft(seqs []model.DraftSeq) [][]int32 { panic("not built") }

// Close frees the executor's memory and closes its Ops.
func (e *Executor) Close() error { return nil }

// NewHostOps returns the Ops that run on the host over the CPU kernels k,
// matching model.Forward bit for bit.
func NewHostOps(k kernels.Backend) Ops { panic("not built") }
