package engine_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/model"
)

// completion is a /v1/completions answer's logprobs: the tokens (the
// prompt's first with echo), each one's logprob (NaN for the first prompt
// token's null) and the top-1 token at each position.
type completion struct {
	tokens []string
	lps    []float64
	top1   []string
}

// complete posts a temperature-0 completion with logprobs 1.
func complete(t *testing.T, base, prompt string, maxTokens int, echo bool) completion {
	t.Helper()
	lp, _ := engine.PostCompletion(t, base, map[string]any{"prompt": prompt, "max_tokens": maxTokens, "temperature": 0,
		"logprobs": 1, "echo": echo, "ignore_eos": true})
	if lp == nil {
		lp = &engine.CompletionLogprobs{}
	}
	c := completion{tokens: lp.Tokens}
	for i, v := range lp.TokenLogprobs {
		x := math.NaN()
		if v != nil {
			x = *v
		}
		c.lps = append(c.lps, x)
		best, top := "", math.Inf(-1)
		if i < len(lp.TopLogprobs) {
			for tok, l := range lp.TopLogprobs[i] {
				if l > top {
					best, top = tok, l
				}
			}
		}
		c.top1 = append(c.top1, best)
	}
	return c
}

// serverInfo gets /get_server_info.
func serverInfo(t *testing.T, e *engine.Engine) map[string]any {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(e.BaseURL(), "/v1") + "/get_server_info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info
}

// dtypePrompts are prompts of the kind the evals send.
var dtypePrompts = []string{
	"The capital of France is", "def fibonacci(n):", "Once upon a time, in a land far away,",
	"Question: what is 17 times 3? Answer:", "The mitochondria is the powerhouse of", "SELECT name FROM users WHERE",
	"In 1969, the first humans", "A haiku about autumn:", "import numpy as np\n", "The theory of relativity states that",
	"Translate to German: good morning", "My favourite colour is",
}

func TestWeightDTypesDriftFromFP32ByTheirPrecision(t *testing.T) {
	t.Parallel()
	const gen = 32
	ref := enginetest.Start(t)
	type figures struct {
		meanAbs        float64 // mean |Δ logprob| of the prompt tokens (teacher-forced)
		agree          float64 // top-1 agreement over the prompt positions
		exact          int     // prompts whose greedy continuation is fp32's
		firstDiverge   float64 // mean first differing position of those that differ
		sameGenerated  float64 // share of generated tokens equal to fp32's, up to the first divergence
		roundedTensors int
	}
	fig := map[model.DType]figures{}
	refEcho := make([]completion, len(dtypePrompts))
	refGen := make([]completion, len(dtypePrompts))
	for i, p := range dtypePrompts {
		refEcho[i] = complete(t, ref.BaseURL(), p, 1, true)
		refGen[i] = complete(t, ref.BaseURL(), p, gen, false)
	}
	for _, d := range model.DTypes[1:] {
		e := enginetest.Start(t, enginetest.WeightDType(string(d)))
		var f figures
		var sum float64
		var n, same, pos, diverged, upto, genTokens int
		for i, p := range dtypePrompts {
			a, b := refEcho[i], complete(t, e.BaseURL(), p, 1, true)
			for j := 1; j < len(p); j++ { // prompt positions; the first has no logprob
				sum += math.Abs(a.lps[j] - b.lps[j])
				n++
				pos++
				if a.top1[j] == b.top1[j] {
					same++
				}
			}
			g := complete(t, e.BaseURL(), p, gen, false)
			k := 0
			for k < gen && g.tokens[k] == refGen[i].tokens[k] {
				k++
			}
			genTokens += gen
			upto += k
			if k == gen {
				f.exact++
			} else {
				diverged++
				f.firstDiverge += float64(k)
			}
		}
		f.meanAbs, f.agree = sum/float64(n), float64(same)/float64(pos)
		f.sameGenerated = float64(upto) / float64(genTokens)
		if diverged > 0 {
			f.firstDiverge /= float64(diverged)
		}
		f.roundedTensors = e.Checkpoint().Rounded
		fig[d] = f
		t.Logf("nano seed 1 vs fp32, %d prompts, %d prompt positions, %d greedy tokens each: %-8s mean |Δlogprob| %.4g, top-1 agreement %.3f, identical continuations %d/%d (first divergence at %.1f on average), tokens agreeing before it %.3f; %d tensors rounded",
			len(dtypePrompts), pos, gen, d, f.meanAbs, f.agree, f.exact, len(dtypePrompts), f.firstDiverge, f.sameGenerated, f.roundedTensors)
	}
	bf, f8, f4 := fig[model.BF16], fig[model.FP8E4M3], fig[model.NVFP4]
	if !(bf.meanAbs > 0 && bf.meanAbs < f8.meanAbs && f8.meanAbs < f4.meanAbs) {
		t.Errorf("mean |Δlogprob| bf16 %.3g, fp8 %.3g, nvfp4 %.3g: want 0 < bf16 < fp8 < nvfp4", bf.meanAbs, f8.meanAbs, f4.meanAbs)
	}
	if bf.agree < 0.95 || f4.agree < 0.5 || f4.agree > bf.agree {
		t.Errorf("top-1 agreement bf16 %.3f, nvfp4 %.3f: want bf16 ≥ 0.95, nvfp4 mostly the same and no better", bf.agree, f4.agree)
	}
	// bf16 is close, not equal: some continuations part from fp32's.
	if bf.exact < len(dtypePrompts)/2 || bf.exact == len(dtypePrompts) || f4.exact > bf.exact {
		t.Errorf("identical continuations bf16 %d, nvfp4 %d of %d: want bf16 mostly but not all, nvfp4 no more", bf.exact, f4.exact, len(dtypePrompts))
	}
}

func TestServerInfoReportsTheCheckpointAndItsRounding(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nano")
	cfg, _ := model.Preset("nano")
	if err := model.Save(dir, cfg, model.Synth(cfg, 7)); err != nil {
		t.Fatal(err)
	}
	linears := 0
	for _, s := range model.Manifest(cfg) {
		if model.Quantized(s.Name) {
			linears++
		}
	}
	preset := enginetest.Start(t, enginetest.WeightDType("nvfp4"), enginetest.With(func(o *engine.Options) { o.Seed = 7 }))
	folder := enginetest.Start(t, enginetest.WeightDType("nvfp4"), enginetest.With(func(o *engine.Options) { o.ModelPath = dir }))
	plain := enginetest.Start(t)
	for _, c := range []struct {
		e    *enginetest.Engine
		want map[string]any
	}{
		{preset, map[string]any{"checkpoint": map[string]any{"preset": "nano", "seed": 7.0}, "weight_dtype": "nvfp4",
			"weight_dtype_tensors": float64(linears), "quantization": "modelopt_fp4"}},
		{folder, map[string]any{"checkpoint": map[string]any{"path": dir}, "weight_dtype": "nvfp4",
			"weight_dtype_tensors": float64(linears), "quantization": "modelopt_fp4"}},
		{plain, map[string]any{"checkpoint": map[string]any{"preset": "nano", "seed": 1.0}, "weight_dtype": "fp32",
			"weight_dtype_tensors": 0.0, "quantization": nil}},
	} {
		info := serverInfo(t, c.e.Engine)
		for k, v := range c.want {
			if fmt.Sprint(info[k]) != fmt.Sprint(v) {
				t.Errorf("%s: /get_server_info %s = %v, want %v", c.e.ModelName(), k, info[k], v)
			}
		}
	}
	// The folder holds the preset's seed-7 weights in F32, so rounded alike
	// they serve the same logprobs, bit for bit.
	for _, p := range dtypePrompts[:3] {
		a, b := complete(t, preset.BaseURL(), p, 8, true), complete(t, folder.BaseURL(), p, 8, true)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: the preset serves %v, its checkpoint %v", p, a, b)
		}
	}
}

func TestAnUnknownWeightDTypeIsRefusedInOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts func(*engine.Options)
		want string
	}{
		{func(o *engine.Options) { o.WeightDType = "int4" }, `weight dtype "int4": want one of fp32, bf16, fp8_e4m3, nvfp4`},
		{func(o *engine.Options) { o.WeightDType, o.Executor = "bf16", "sim" }, "the simulated executor has no weights to round"},
	} {
		o := engine.DefaultOptions()
		o.Host, o.Port = "127.0.0.1", 0
		c.opts(&o)
		e, err := engine.Start(o)
		if err == nil {
			e.Shutdown(t.Context())
			t.Fatalf("%s: started", c.want)
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q, want one line with %q", err, c.want)
		}
	}
}
