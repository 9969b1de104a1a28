package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// chunker is a parallel job cut into numbered chunks that can run in any
// order on any goroutine.
type chunker interface {
	runChunk(i int)
}

// pool runs the chunks of one job at a time on persistent worker goroutines
// and on the goroutine that submitted it. Nothing in a submission allocates:
// the job is a struct the pool owns (gemm), filled under mu.
//
// Waking a parked goroutine costs several microseconds in the Go scheduler,
// more than a whole small product, so a worker that finishes a job spins for
// up to spinFor watching for the next one before it parks, and the
// submitter spins (yielding its P) while the last chunks finish. During a
// forward pass, products follow each other closely and the workers never
// park.
//
// state packs the job's generation (high 32 bits), its number of chunks
// (16 bits) and how many have been claimed (low 16 bits), so that a worker
// claims a chunk with one compare-and-swap and can never claim a chunk of a
// job that has already finished: a finished job has claimed == chunks.
type pool struct {
	mu        sync.Mutex // one job at a time; a busy pool makes callers run serially
	workers   []poolWorker
	state     atomic.Uint64
	completed atomic.Int32
	job       chunker

	// gemm is the one product job, reused so that submitting it allocates
	// nothing; it is only touched while mu is held.
	gemm gemmJob
}

type poolWorker struct {
	wake     chan struct{} // buffered, so a wake-up is never lost
	sleeping atomic.Bool   // parked (or about to park) on wake
}

const (
	// maxChunks is the most chunks one job can have (16 bits of state).
	maxChunks = 1<<16 - 1
	// spinFor is how long an idle worker watches for new work before it
	// parks.
	spinFor = 50 * time.Microsecond
)

var (
	sharedPool     *pool
	sharedPoolOnce sync.Once
)

// defaultPool returns the process-wide pool with one worker per extra
// GOMAXPROCS slot, started on first use.
func defaultPool() *pool {
	sharedPoolOnce.Do(func() { sharedPool = newPool(runtime.GOMAXPROCS(0) - 1) })
	return sharedPool
}

func newPool(workers int) *pool {
	p := &pool{workers: make([]poolWorker, max(workers, 0))}
	for i := range p.workers {
		w := &p.workers[i]
		w.wake = make(chan struct{}, 1)
		go p.work(w)
	}
	return p
}

// threads is how many goroutines a job can run on.
func (p *pool) threads() int { return len(p.workers) + 1 }

// acquire takes the pool for one job. It fails at once if another job holds
// it; the caller then runs its work itself, since the cores are busy anyway
// and results do not depend on which goroutine computed a chunk.
func (p *pool) acquire() bool { return p.mu.TryLock() }

func (p *pool) release() { p.mu.Unlock() }

// runLocked executes job.runChunk(i) for every i < chunks and returns when
// all have finished. The caller must hold the pool (acquire).
func (p *pool) runLocked(job chunker, chunks int) {
	if chunks > maxChunks {
		panic("kernels: too many chunks")
	}
	if chunks <= 1 || len(p.workers) == 0 {
		for i := range chunks {
			job.runChunk(i)
		}
		return
	}
	p.job = job
	p.completed.Store(0)
	gen := p.state.Load()>>32 + 1
	p.state.Store(gen<<32 | uint64(chunks)<<16)
	for i := range p.workers[:min(len(p.workers), chunks-1)] {
		if w := &p.workers[i]; w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
	p.help()
	for p.completed.Load() != int32(chunks) {
		// Let a worker that shares this P run; otherwise this returns at once.
		runtime.Gosched()
	}
	p.job = nil
}

// help claims and runs chunks of the current job until none is left.
func (p *pool) help() {
	for {
		s := p.state.Load()
		if claimed, chunks := s&0xffff, s>>16&0xffff; claimed >= chunks {
			return
		} else if p.state.CompareAndSwap(s, s+1) {
			// The claim succeeded, so the job is unfinished and p.job is its job.
			p.job.runChunk(int(claimed))
			p.completed.Add(1)
		}
	}
}

// pending reports whether the current job has unclaimed chunks.
func (p *pool) pending() bool {
	s := p.state.Load()
	return s&0xffff < s>>16&0xffff
}

// work is a worker goroutine's loop.
func (p *pool) work(w *poolWorker) {
	for {
		p.help()
		if p.spin() {
			continue
		}
		w.sleeping.Store(true)
		// A job published before sleeping was set would not wake us: look once
		// more.
		if !p.pending() {
			<-w.wake
		}
		w.sleeping.Store(false)
	}
}

// spin watches for new work for up to spinFor and reports whether it came.
func (p *pool) spin() bool {
	start := time.Now()
	for {
		for range 256 {
			if p.pending() {
				return true
			}
		}
		if time.Since(start) > spinFor {
			return false
		}
		runtime.Gosched() // do not hold the P from goroutines with real work
	}
}
