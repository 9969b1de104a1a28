package model

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelFor calls fn(worker, i) for every i in [0, n), spread over up to
// GOMAXPROCS goroutines that take items in turn; worker numbers the
// goroutine (for its scratch). Each item's result must depend on the item
// alone, so the split never changes a result.
func parallelFor(n int, fn func(worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
}

// worker returns parallel worker w's scratch space; prepareWorkers made it.
func (m *Model) worker(w int) *workspace { return m.workers[w] }

// prepareWorkers makes one scratch space per possible worker, before any
// goroutine can ask for one.
func (m *Model) prepareWorkers() {
	for len(m.workers) < runtime.GOMAXPROCS(0) {
		m.workers = append(m.workers, &workspace{})
	}
}
