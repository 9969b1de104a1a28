package summary

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// events is n content events read in groups of per (the last group what
// is left), the reads gap seconds apart from start: the events of one read
// share its time, as the client dates them.
func events(n, per int, start, gap float64) []float64 {
	ev := make([]float64, n)
	for k := range ev {
		ev[k] = start + float64(k/per)*gap
	}
	return ev
}

// split is n events read in alternate reads of a and b events, 10 ms
// apart.
func split(n, a, b int) []float64 {
	ev := make([]float64, 0, n)
	for read := 0; len(ev) < n; read++ {
		size := a
		if read%2 == 1 {
			size = b
		}
		for range min(size, n-len(ev)) {
			ev = append(ev, 0.1+float64(read)*0.01)
		}
	}
	return ev
}

// Each stream's truth is how it was sent: one event per read, or a
// proxy's blocks of many. Only the blocked ones are buffered.
func TestAStreamIsBufferedWhenItsEventsCameInBlocks(t *testing.T) {
	t.Parallel()
	lateClient := events(64, 1, 0.1, 0.02)
	for k := 8; k+3 <= len(lateClient); k += 8 {
		// Seven times, every eighth read, the client was late and got
		// three events at once: 64 - 7×2 arrivals.
		lateClient[k], lateClient[k+1] = lateClient[k+2], lateClient[k+2]
	}
	// 10 reads of 12 events and 20 of one, every third read the late one:
	// 140 events in 30 reads, a mean of 4.7, a third of the reads blocks.
	var lateThird []float64
	for read := range 30 {
		size := 1
		if read%3 == 2 {
			size = 12
		}
		for range size {
			lateThird = append(lateThird, 0.1+float64(read)*0.005)
		}
	}
	for _, tc := range []struct {
		name     string
		events   []float64
		arrivals int
		buffered bool
	}{
		{"a server streaming a token every 20 ms arrives one event a read", events(64, 1, 0.1, 0.02), 64, false},
		{"a proxy that holds the whole answer delivers it in one read", events(64, 64, 1.3, 0), 1, true},
		{"nginx's 4 KiB blocks of 16 chat chunks arrive in 4 reads", events(64, 16, 0.4, 0.32), 4, true},
		{"8 KiB blocks of 32 chunks arrive in 2 reads", events(64, 32, 0.7, 0.64), 2, true},
		{"a client late now and then coalesces 3 events into one read", lateClient, 50, false},
		{"blocks of 7 events are under 8 a read", events(70, 7, 0.1, 0.14), 10, false},
		{"blocks of 14 split in two reads, 14 and 2, are blocks in half the reads", split(64, 14, 2), 8, true},
		{"a client late on a third of its reads, 12 events each, is not", lateThird, 30, false},
		{"15 events in one read are too few to judge", events(15, 15, 0.3, 0), 1, false},
		{"64 events at once 5 ms after t0 are too soon to judge", events(64, 64, 0.005, 0), 1, false},
	} {
		if got := Arrivals(tc.events); got != tc.arrivals {
			t.Errorf("%s: %d arrivals, want %d", tc.name, got, tc.arrivals)
		}
		if got := BufferedEvents(tc.events); got != tc.buffered {
			t.Errorf("%s: buffered %v, want %v", tc.name, got, tc.buffered)
		}
	}
}

// Speculative decoding packs several tokens into one event: 16 events of
// 4 tokens each, one a read, are not buffered, however many tokens each.
func TestTokensPackedIntoOneEventAreNotBuffering(t *testing.T) {
	t.Parallel()
	ev := events(16, 1, 0.1, 0.03)
	rec := schema.Record{TFirst: fp(0.1), TLast: fp(ev[15]), TEnd: fp(ev[15]), Events: ev, N: 64, NSource: schema.NFromUsage}
	if Buffered(&rec) {
		t.Error("16 events of 4 tokens, one a read: buffered; want not")
	}
	r := Phase("p", 8, 64, []schema.Record{rec}, schema.StatusComplete)
	if r.Buffered != 0 || r.TokensPerEvent == nil || *r.TokensPerEvent != 4 {
		t.Errorf("buffered %d, tokens_per_event %v; want 0 and 4", r.Buffered, deref(r.TokensPerEvent))
	}
}

// The phase counts the completed requests that arrived buffered: of three
// completed (two in one read each, one streamed) and one failed in one
// read, 2; a phase with none leaves the field out of report.json.
func TestThePhaseCountsItsBufferedRequests(t *testing.T) {
	t.Parallel()
	whole := events(32, 32, 0.5, 0)
	streamed := events(32, 1, 0.1, 0.01)
	done := func(i int, ev []float64) schema.Record {
		return schema.Record{I: i, TFirst: fp(ev[0]), TLast: fp(ev[len(ev)-1]), TEnd: fp(ev[len(ev)-1]), Events: ev, N: len(ev), NSource: schema.NFromEvents}
	}
	recs := []schema.Record{done(0, whole), done(1, streamed), done(2, whole),
		{I: 3, Class: schema.Truncated, Events: whole, TEnd: fp(0.6)}}
	r := Phase("p", 8, 32, recs, schema.StatusComplete)
	if r.Completed != 3 || r.Buffered != 2 {
		t.Errorf("completed %d, buffered %d; want 3 and 2", r.Completed, r.Buffered)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"buffered":2`) {
		t.Errorf("report.json's phase lacks buffered 2: %s", b)
	}
	b, _ = json.Marshal(Phase("p", 8, 32, recs[1:2], schema.StatusComplete))
	if strings.Contains(string(b), `"buffered"`) {
		t.Errorf("a phase with none buffered says buffered: %s", b)
	}
}
