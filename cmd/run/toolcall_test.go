package run

import (
	"math"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// glmbench run --extra-body '{"tools": [...], "tool_choice": "required"}'
// against vLLM's and SGLang's fakes, which then stream every generation as
// one tool call (its name chunk, then one arguments fragment a token, Gap
// apart): every request completes with n OUT from usage (ignore_eos), OUT
// tool-call events (the name chunk is the first token's), t_first at the
// name chunk (no earlier than the fake's TTFT, while the role chunk came at
// once), TPOT its mean gap and at least Gap, and the phase's tpot_mean its
// itl_mean. Without counting tool calls as content these requests are
// classed empty.
func TestRunWithAForcedToolCallMeasuresTheCall(t *testing.T) {
	t.Parallel()
	const out, gap, ttft = 8, 20 * time.Millisecond, 100 * time.Millisecond
	const tools = `{"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}], "tool_choice": "required"}`
	// Cut at max_tokens (ignore_eos): vLLM and SGLang give the engine's
	// "length".
	for kind, finish := range map[string]string{endpointstest.VLLM: "length", endpointstest.SGLang: "length"} {
		p := endpointstest.Start(t, kind, endpointstest.Options{TTFT: ttft, Gap: gap})
		in := runOK(t, t.TempDir(), "--endpoint", p.BaseURL(), "--phase", "p=3/40/8", "--no-metrics", "--extra-body", tools)
		if len(in.Records) != 3 {
			t.Fatalf("%s: %d records", kind, len(in.Records))
		}
		for _, r := range in.Records {
			if !r.Completed() || r.N != out || r.NSource != schema.NFromUsage || r.ToolCallEvents != out || len(r.Events) != out || r.Finish != finish {
				t.Fatalf("%s: request %d: %+v; want completed, n %d from usage, %d tool-call events, finish %s", kind, r.I, r, out, out, finish)
			}
			if *r.TFirst < ttft.Seconds() {
				t.Errorf("%s: request %d: t_first %g s, before the fake's TTFT", kind, r.I, *r.TFirst)
			}
			tpot, ok := r.TPOT()
			if mean := (*r.TLast - *r.TFirst) / (out - 1); !ok || math.Abs(tpot-mean) > 1e-12 || tpot < 0.9*gap.Seconds() {
				t.Errorf("%s: request %d: TPOT %g (%v), want its mean gap %g, at least %g", kind, r.I, tpot, ok, mean, gap.Seconds())
			}
		}
		ph := in.Report.Phases[0]
		if ph.Completed != 3 || ph.TPOTMean == nil || ph.ITLMean == nil || math.Abs(*ph.TPOTMean-*ph.ITLMean) > 1e-9 {
			t.Errorf("%s: completed %d, tpot_mean %v, itl_mean %v: want 3 and them equal", kind, ph.Completed, ph.TPOTMean, ph.ITLMean)
		}
	}
}
