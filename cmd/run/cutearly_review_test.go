package run

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// A request's n below its max_tokens at finish_reason "length" is a cap of
// the server's own only where n is the server's count (usage): counted from
// content events it is fewer than the tokens wherever a chunk carries
// several (SGLang's --stream-interval, vLLM's stream_interval, speculative
// decoding's accepted drafts), and the server honoured max_tokens. The
// truth: of four completed records at max_tokens 64 ending at length, the
// one with usage 40 is cut early, the one with usage 64 is not, and the two
// counted from events (40 and 64) say nothing: cutEarly is 1.
func TestCutEarlyCountsOnlyTheServersOwnTokenCounts(t *testing.T) {
	t.Parallel()
	r := &schema.PhaseResult{OutputLen: 64}
	recs := []schema.Record{
		{MaxTokens: 64, Finish: "length", N: 40, NSource: schema.NFromUsage},
		{MaxTokens: 64, Finish: "length", N: 64, NSource: schema.NFromUsage},
		{MaxTokens: 64, Finish: "length", N: 40, NSource: schema.NFromEvents},
		{MaxTokens: 64, Finish: "length", N: 64, NSource: schema.NFromEvents},
	}
	if n := cutEarly(r, recs); n != 1 {
		t.Errorf("cutEarly = %d; want 1", n)
	}
}
