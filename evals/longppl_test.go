package evals

import (
	"math"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

func TestSegmentsAre256TokensWithShortTailsJoined(t *testing.T) {
	t.Parallel()
	const s = SegmentTokens
	nlls := func(parts ...[2]float64) []float64 { // (count, nll) runs
		var out []float64
		for _, p := range parts {
			for range int(p[0]) {
				out = append(out, p[1])
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		nll  []float64
		want []float64
	}{
		{"an empty generation has no segment", nil, nil},
		{"a short generation is one segment", nlls([2]float64{10, 1}), []float64{math.E}},
		{"two full segments", nlls([2]float64{s, 1}, [2]float64{s, 2}), []float64{math.E, math.Exp(2)}},
		{"a tail of half a segment stands alone", nlls([2]float64{s, 1}, [2]float64{s / 2, 3}), []float64{math.E, math.Exp(3)}},
		{"a shorter tail joins the segment before", nlls([2]float64{s, 1}, [2]float64{s/2 - 1, 3}),
			[]float64{math.Exp((s + 3*(s/2-1)) / float64(s+s/2-1))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := SegmentPPLs(tc.nll)
			if len(got) != len(tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Fatalf("%v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestLongPPLOnTheBuiltinEngine(t *testing.T) {
	t.Parallel()
	b := startBuiltin(t)
	res := runEval("long-ppl", Config{Endpoint: b.Endpoint, GenTokens: 64, Limit: 2, Concurrency: 2}, SampleDocs())
	if res.Status != StatusOK || res.N != 2 || res.Metrics["tokens"] != 128 {
		t.Fatalf("%+v", res)
	}
	// Each generation is one segment here, so the worst is at least the pooled ppl.
	if p, w := res.Metrics["ppl"], res.Metrics["worst_seg"]; !(p > 1 && w >= p && !math.IsInf(w, 0)) {
		t.Errorf("ppl %v worst_seg %v", p, w)
	}
}

func TestLongPPLFromTheGeneratedLogprobs(t *testing.T) {
	t.Parallel()
	gen := strings.Repeat("ab", 200) // 400 tokens: segments of 256 and 144
	f := newFakeLM(t, func(f *fakeLM) { f.generate = func(string) string { return gen } })
	res := f.run("long-ppl", Config{GenTokens: len(gen), Limit: 3}, SampleDocs())
	mean := -(byteLP('a') + byteLP('b')) / 2
	if res.Status != StatusOK || res.N != 3 || res.Metrics["tokens"] != 1200 ||
		math.Abs(res.Metrics["ppl"]-math.Exp(mean)) > 1e-9 || math.Abs(res.Metrics["worst_seg"]-math.Exp(mean)) > 1e-9 {
		t.Fatalf("%+v, want ppl %v", res, math.Exp(mean))
	}
	// No logprobs: no score.
	g := newFakeLM(t, func(f *fakeLM) { f.noLogprobs = true })
	if res := g.run("long-ppl", Config{GenTokens: 8, Limit: 1}, SampleDocs()); res.Status != StatusUnsupported || KindOf(res.Failure) != LogprobsMissing {
		t.Fatalf("%+v", res)
	}
}

func TestLongPromptsAreCutAtALineEnd(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("a line of text\n", 1000)
	p := LongPrompt(text)
	if len(p) > LongPromptBytes || !strings.HasSuffix(p, "\n") || !strings.HasPrefix(text, p) {
		t.Fatalf("%d bytes ending %q", len(p), p[len(p)-5:])
	}
	if LongPrompt("short") != "short" {
		t.Error("a short document is its own prompt")
	}
}

// The OpenAI API serves chat alone to a chat model (its /v1/completions is
// a 404) and refuses ignore_eos as an unrecognized argument (400): long-ppl
// asks again without it and scores the generations as they came, stopped
// at the model's EOS, under a method that says so.
func TestLongPPLOnTheOpenAIAPIGeneratesWithoutIgnoreEOSAndSaysSo(t *testing.T) {
	t.Parallel()
	const eosAfter, gen, prompts = 5, 24, 3
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{EOSAfter: eosAfter})
	res := runEval("long-ppl", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, GenTokens: gen, Limit: prompts, Concurrency: 2}, SampleDocs())
	if res.Status != StatusOK || res.Method != MethodChatLogprobs+UntilEOS || res.N != prompts || res.Failure != nil {
		t.Fatalf("%+v %+v, want ok by %s", res, res.Failure, MethodChatLogprobs+UntilEOS)
	}
	// The truth: each generation stopped after eosAfter tokens, as the
	// personality's model does without ignore_eos.
	if got := res.Metrics["tokens"]; got != eosAfter*prompts {
		t.Errorf("tokens %v, want %d (%d prompts stopped at EOS after %d)", got, eosAfter*prompts, prompts, eosAfter)
	}
	if ppl := res.Metrics["ppl"]; !(ppl >= 1) || math.IsInf(ppl, 0) {
		t.Errorf("ppl %v", ppl)
	}
}

// A route that takes ignore_eos keeps it and the plain method: vLLM's runs
// every generation to GenTokens even where its model would stop.
func TestLongPPLKeepsIgnoreEOSWhereTheRouteTakesIt(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{EOSAfter: 5})
	res := runEval("long-ppl", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, GenTokens: 24, Limit: 2}, SampleDocs())
	if res.Status != StatusOK || res.Method != MethodGenerate || res.Metrics["tokens"] != 48 {
		t.Fatalf("%+v %+v, want ok by %s over 48 tokens", res, res.Failure, MethodGenerate)
	}
}

// A route's refusal of ignore_eos says nothing of the next route's: where
// /v1/completions refuses it and then gives no logprobs, the chat route is
// asked with ignore_eos, and where it takes it, every generation runs to
// GenTokens under the plain method.
func TestLongPPLAsksTheNextRouteWithIgnoreEOSAfterOneRefusedIt(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) {
		f.chat = true
		f.noLogprobs = true
		f.completionsRefuseIgnoreEOS = true
	})
	res := f.run("long-ppl", Config{GenTokens: 24, Limit: 2}, SampleDocs())
	if res.Status != StatusOK || res.Method != MethodChatLogprobs || res.Metrics["tokens"] != 48 {
		t.Fatalf("%+v %+v, want ok by %s over 48 tokens", res, res.Failure, MethodChatLogprobs)
	}
	if f.count("completions_refused") != 1 || f.count("plain") != 1 || f.count("chat") != 2 {
		t.Errorf("%v: want /v1/completions refused once, asked once without ignore_eos, then chat twice", f.calls)
	}
}

// Without ignore_eos (the OpenAI API), generations stop at the model's EOS
// at lengths of their own: one of 3 tokens is no 256-token segment and
// decides nothing in worst_seg, and one that stopped at once (no token, no
// logprobs, finish_reason stop) is empty, scored nothing, not a failure.
func TestLongPPLUntilEOSScoresShortAndEmptyGenerationsAsTheyCame(t *testing.T) {
	t.Parallel()
	docs := SampleDocs()
	long, short := strings.Repeat("ab", 150), "ccc" // 300 tokens, and 3 of a higher nll
	gens := map[string]string{LongPrompt(docs.Docs[0].Text): long, LongPrompt(docs.Docs[1].Text): short, LongPrompt(docs.Docs[2].Text): ""}
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.refuseIgnoreEOS = true
		f.generate = func(p string) string { return gens[p] }
	})
	res := f.run("long-ppl", Config{GenTokens: 400, Limit: 3, Concurrency: 2}, docs)
	// The truth: ppl over the 303 tokens scored; worst_seg is the long
	// generation's one segment (256 and a tail of 44 joined).
	nll := 150*-(byteLP('a')+byteLP('b')) + 3*-byteLP('c')
	wantPPL, wantWorst := math.Exp(nll/303), math.Exp(-(byteLP('a')+byteLP('b'))/2)
	if res.Status != StatusOK || res.Method != MethodChatLogprobs+UntilEOS || res.N != 3 || res.Metrics["tokens"] != 303 ||
		math.Abs(res.Metrics["ppl"]-wantPPL) > 1e-9 || math.Abs(res.Metrics["worst_seg"]-wantWorst) > 1e-9 {
		t.Fatalf("%+v %+v, want ppl %v, worst_seg %v over 303 tokens", res, res.Failure, wantPPL, wantWorst)
	}

	// Only short generations: no segment, no worst_seg.
	g := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.refuseIgnoreEOS = true
		f.generate = func(string) string { return short }
	})
	res = g.run("long-ppl", Config{GenTokens: 400, Limit: 2}, docs)
	if _, ok := res.Metrics["worst_seg"]; res.Status != StatusOK || ok || res.Metrics["tokens"] != 6 {
		t.Fatalf("%+v %+v, want ok over 6 tokens without worst_seg", res, res.Failure)
	}
}

func TestLongPPLUntilEOSWhereEveryGenerationIsEmptyFails(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.refuseIgnoreEOS = true
		f.generate = func(string) string { return "" }
	})
	res := f.run("long-ppl", Config{GenTokens: 64, Limit: 2}, SampleDocs())
	if res.Status != StatusFailed || res.Metrics != nil || KindOf(res.Failure) != BadResponse ||
		!strings.Contains(res.Failure.Detail, "each of the 2 generations stopped at once") {
		t.Fatalf("%+v %+v", res, res.Failure)
	}
}

// On /v1/completions too, an answer LMDeploy gave up on (a prompt past
// --session-len: finish_reason "error", the engine's error text as text,
// no logprobs) is a bad_response saying so, not missing logprobs.
func TestLongPPLOnAnAnswerLMDeployGaveUpOnIsABadResponse(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 8, LMDeploy: endpointstest.LMDeployOptions{LogprobsMode: "raw_logprobs"}})
	res := runEval("long-ppl", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, GenTokens: 24, Limit: 2}, SampleDocs())
	if res.Failure == nil || res.Failure.Kind != string(BadResponse) || res.Failure.Detail != `the server gave up on the answer (finish_reason "error"): internal error happened, status code ResponseType.INPUT_LENGTH_ERROR` {
		t.Fatalf("%+v %+v; want a bad_response saying the server gave up", res, res.Failure)
	}
}
