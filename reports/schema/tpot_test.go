package schema

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TPOT divides the time the content events span by the tokens between
// them: n − 1, or n − R − 1 when R reasoning tokens were counted and none
// streamed (they all came before the first event); events that span no
// time give none.
func TestTPOTLeavesOutHiddenReasoningTokens(t *testing.T) {
	t.Parallel()
	span := func(first, last float64) (*float64, *float64) { return &first, &last }
	for _, tc := range []struct {
		name          string
		n, r, revents int
		first, last   float64
		want          float64
		ok            bool
	}{
		// 16 hidden + 24 visible tokens 20 ms apart: 23 gaps.
		{"hidden reasoning", 40, 16, 0, 3, 3 + 23*0.020, 0.020, true},
		// 16 streamed reasoning + 24 content events 20 ms apart: 39 gaps.
		{"streamed reasoning is in the events", 40, 16, 16, 3, 3 + 39*0.020, 0.020, true},
		{"no reasoning reported", 40, 0, 0, 3, 3 + 39*0.020, 0.020, true},
		{"one visible token has no gap", 40, 39, 0, 3, 3, 0, false},
		{"all hidden", 40, 40, 0, 3, 3, 0, false},
		{"two visible tokens", 18, 16, 0, 3, 3.5, 0.5, true},
		{"one token", 1, 0, 0, 3, 3, 0, false},
		// A whole answer (or a tool call) in one event: no time was seen
		// between tokens, which is no TPOT, not a TPOT of 0.
		{"256 tokens in one event", 256, 0, 0, 3, 3, 0, false},
	} {
		first, last := span(tc.first, tc.last)
		r := Record{N: tc.n, ReasoningTokens: tc.r, ReasoningEvents: tc.revents, TFirst: first, TLast: last}
		got, ok := r.TPOT()
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: TPOT %g (%v), want %g (%v)", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (&Record{N: 40, ReasoningTokens: 16}).TPOT(); ok {
		t.Error("TPOT of a record without content events has a value")
	}
}

// A record keeps the reasoning count and events under their names, and
// leaves both out when there are none (records of servers that do not
// reason read as before).
func TestRecordsKeepReasoningOnlyWhereThereIsSome(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Record{N: 40, ReasoningTokens: 16, ReasoningEvents: 3})
	if err != nil || !strings.Contains(string(b), `"reasoning_tokens":16`) || !strings.Contains(string(b), `"reasoning_events":3`) {
		t.Fatalf("%s %v", b, err)
	}
	if b, _ := json.Marshal(Record{N: 40}); strings.Contains(string(b), "reasoning") {
		t.Fatalf("%s: reasoning fields without reasoning", b)
	}
}
