package selftest

import (
	"math"
	"testing"
)

func TestCompareMeasuresClientTimesAgainstTheTruthAsDurations(t *testing.T) {
	// The server saw request k arrive at 1000 s + k ms and wrote its events
	// 10, 20 and 30 ms after; the client sent 0.5 ms before the arrival and
	// read each event 0.2 ms after its write, except one late read.
	truth := map[string]truthLine{}
	var client []timing
	for k := range 100 {
		key := string(rune('a'+k%26)) + string(rune('a'+k/26))
		arr := int64(1000e9) + int64(k)*1e6
		truth[key] = truthLine{Key: key, Arrival: arr, Events: []int64{arr + 10e6, arr + 20e6, arr + 30e6}}
		t0 := float64(arr)/1e9 - 0.0005
		ev := []float64{0.0102 + 0.0005, 0.0202 + 0.0005, 0.0302 + 0.0005}
		if k == 99 {
			ev[1] += 0.004 // a read 4 ms late: two gaps off by 4 ms
		}
		client = append(client, timing{key: key, t0: t0, events: ev})
	}
	client = append(client, timing{key: "zz", events: []float64{1}}) // no truth: not matched
	lv := compare(client, truth)
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-6 {
			t.Errorf("%s = %v, want %.4f", name, got, want)
		}
	}
	if lv.Matched != 100 {
		t.Errorf("matched %d", lv.Matched)
	}
	near("ttft p50", lv.TTFTErrP50, 0.7) // 0.5 ms out + 0.2 ms back
	near("ttft p99", lv.TTFTErrP99, 0.7)
	near("up p50", lv.UpP50, 0.5)
	near("down p99", lv.DownP99, 0.2)
	near("gap p50", lv.IETErrP50, 0)
	// 200 gaps, two of them 4 ms off: the p99 interpolates between 0 and 4.
	if lv.IETErrP99 == nil || *lv.IETErrP99 <= 0 || *lv.IETErrP99 > 4 {
		t.Errorf("gap p99 = %v", lv.IETErrP99)
	}
	if lv := compare(nil, truth); lv.TTFTErrP50 != nil || lv.Matched != 0 {
		t.Errorf("empty: %+v", lv)
	}
}
