package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Eight writers of 1,000 lines each: every line arrives whole (run with
// -race, the buffer's lock is what keeps them apart).
func TestConcurrentWritesArriveWhole(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 8000 {
		t.Fatalf("%d whole lines, want 8000", got)
	}
}
