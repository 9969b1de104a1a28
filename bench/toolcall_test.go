package bench

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// requiredTool is an --extra-body that forces a call of one tool.
const requiredTool = `{"tool_choice":"required","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`

// A model forced to call a tool streams its OUT tokens as one tool call:
// on each server's fake (the name chunk, then OUT−1 argument fragments,
// Gap apart, after TTFT), calibration (max_tokens 1 probes; without stream
// usage, the unstreamed probe too) and the shape probe pass, and every
// request completes with n OUT (from usage, or from its events when the
// stream has none), OUT content events all of them tool-call events (the
// name chunk counts: it is the first token), t_first at the name chunk (no
// earlier than the fake's TTFT: the role chunk before it carries nothing),
// and TPOT its mean gap, at least the fake's Gap, so tpot_mean is itl_mean.
func TestAForcedToolCallIsMeasuredAsOutput(t *testing.T) {
	t.Parallel()
	const out, ttft = 12, 100 * time.Millisecond
	for _, c := range []struct {
		kind    string
		noUsage bool
		finish  string
	}{
		{endpointstest.VLLM, false, "length"},  // ignore_eos: cut at max_tokens, the engine's reason
		{endpointstest.SGLang, true, "length"}, // SGLang says tool_calls only for a call the engine stopped
		{endpointstest.LlamaCpp, false, "length"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, c.kind, endpointstest.Options{TTFT: ttft, Gap: tpotGap})
			o := &Options{Endpoint: resolve(t, p.BaseURL(), p.Opts.Model),
				Shape:  Shape{Model: p.Opts.Model, IgnoreEOS: true, NoStreamUsage: c.noUsage, Extra: json.RawMessage(requiredTool)},
				Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second,
				PhaseCap: time.Minute, Nonce: "7e0e0a21"}
			plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 3, In: 64, Out: out}})
			if err != nil {
				t.Fatal(err)
			}
			records := RunPhase(context.Background(), o, plans[0]).Records
			source := schema.NFromUsage
			if c.noUsage {
				source = schema.NFromEvents
			}
			for _, rec := range records {
				if !rec.Completed() || rec.N != out || rec.NSource != source || len(rec.Events) != out || rec.ToolCallEvents != out ||
					rec.ReasoningEvents != 0 || rec.Finish != c.finish {
					t.Fatalf("request %d: %+v; want completed, n %d from %s, %d events all tool calls, finish %s", rec.I, rec, out, source, out, c.finish)
				}
				if *rec.TFirst < ttft.Seconds() {
					t.Errorf("request %d: t_first %g s, before the fake's TTFT %g s", rec.I, *rec.TFirst, ttft.Seconds())
				}
				tpot, ok := rec.TPOT()
				meanGap := (*rec.TLast - *rec.TFirst) / float64(out-1)
				if !ok || math.Abs(tpot-meanGap) > 1e-12 || tpot < 0.9*tpotGap.Seconds() {
					t.Errorf("request %d: TPOT %g (%v), want its mean gap %g, at least the fake's %g", rec.I, tpot, ok, meanGap, tpotGap.Seconds())
				}
			}
			ph := summary.Phase("x", 64, out, records, "")
			if ph.Completed != 3 || ph.TPOTMean == nil || ph.ITLMean == nil || math.Abs(*ph.TPOTMean-*ph.ITLMean) > 1e-9 {
				t.Errorf("completed %d, tpot_mean %v, itl_mean %v: want 3 and them equal", ph.Completed, ph.TPOTMean, ph.ITLMean)
			}
		})
	}
}

// A probe that got no content event while --extra-body adds tools says
// that no tool call came either, and why one may not have (a small OUT, or
// another shape); without tools, or for another failure, nothing of tools.
func TestAnEmptyProbeWithToolsSaysNoToolCallCameEither(t *testing.T) {
	t.Parallel()
	tools := Shape{Extra: json.RawMessage(requiredTool)}
	for _, c := range []struct {
		name  string
		s     Shape
		class schema.Class
		want  bool
	}{
		{"tools, no content", tools, schema.Empty, true},
		{"no tools, no content", Shape{}, schema.Empty, false},
		{"tools, a server error", tools, schema.HTTP5xx, false},
	} {
		p := &prober{shape: c.s}
		msg := p.fail("probe", &endpoints.StreamResult{Status: 200, Class: c.class, Detail: "200 with no content event"}).Error()
		if got := strings.Contains(msg, toolHint); got != c.want {
			t.Errorf("%s: %s", c.name, msg)
		}
		if strings.Contains(msg, "which is no content event") {
			t.Errorf("%s: says a tool call is no content event: %s", c.name, msg)
		}
	}
}
