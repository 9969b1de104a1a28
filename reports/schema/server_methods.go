package schema

import (
	"encoding/json"
	"fmt"
	"math"
)

// histogramJSON is Histogram without its methods, for them to encode.
type histogramJSON Histogram

// MarshalJSON writes h as metrics.jsonl keeps it: JSON has no +Inf, so le
// lists the finite bounds and counts their cumulative counts, and count is
// the +Inf bucket's count (Prometheus's _count, which equals it).
func (h Histogram) MarshalJSON() ([]byte, error) {
	p := histogramJSON(h)
	if n := len(p.LE); n > 0 && math.IsInf(p.LE[n-1], 1) {
		if len(p.Counts) == n {
			p.Count = p.Counts[n-1]
			p.Counts = p.Counts[:n-1]
		}
		p.LE = p.LE[:n-1]
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads what MarshalJSON writes and restores the +Inf bucket
// last, with count's count. Bounds and counts must be as many.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var p histogramJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if len(p.Counts) != len(p.LE) {
		return fmt.Errorf("histogram has %d bounds (le) but %d counts", len(p.LE), len(p.Counts))
	}
	if n := len(p.LE); n == 0 || !math.IsInf(p.LE[n-1], 1) {
		p.LE = append(p.LE, math.Inf(1))
		p.Counts = append(p.Counts, p.Count)
	}
	*h = Histogram(p)
	return nil
}
