package server

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/kernels"
)

type completionResult struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageResult `json:"usage"`
}

func (e *env) complete(body map[string]any) completionResult {
	e.t.Helper()
	if body["model"] == nil {
		body["model"] = "glmbench-nano"
	}
	code, _, b := e.post("/v1/completions", body)
	if code != http.StatusOK {
		e.t.Fatalf("completions: status %d: %s", code, b)
	}
	r := decode[completionResult](e.t, b)
	if r.Object != "text_completion" || !strings.HasPrefix(r.ID, "cmpl-") || len(r.Choices) != 1 || r.Usage == nil {
		e.t.Fatalf("completion %s: want object text_completion, a cmpl- id, one choice and usage", b)
	}
	return r
}

// forwardLogprobs runs the nano model alone over ids and returns, for each
// position i ≥ 1, the log-softmax logprob of ids[i] given ids[:i], with
// padding ids masked as the scheduler masks them.
func forwardLogprobs(t *testing.T, ids []int32) []float32 {
	t.Helper()
	cfg, w := nanoWeights()
	kv := model.NewKVCacheNoMTP(cfg, len(ids), 1)
	pages, _ := kv.Alloc(len(ids))
	m := model.New(cfg, w, kernels.Default(), kv)
	out := m.Forward([]model.Seq{{Tokens: ids, Pos: 0, Slots: kv.SlotsFor(nil, pages, 0, len(ids)), Logits: model.AllRows}})
	lps := make([]float32, len(ids))
	row := make([]float32, cfg.VocabSize)
	for i := 1; i < len(ids); i++ {
		copy(row, out.Logits.Row(i-1))
		for j := tokenizer.MinVocabSize; j < len(row); j++ {
			row[j] = float32(math.Inf(-1))
		}
		sampler.LogSoftmax(row, row)
		lps[i] = row[ids[i]]
	}
	return lps
}

func TestCompletionEchoLogprobsAreTheModelsOwn(t *testing.T) {
	e := newEnv(t, envConfig{})
	const prompt = "The quick brown fox"
	r := e.complete(map[string]any{"prompt": prompt, "echo": true, "logprobs": 2, "max_tokens": 4,
		"temperature": 0, "ignore_eos": true, "return_tokens_as_token_ids": true})
	c := r.Choices[0]
	lp := c.Logprobs
	n := len(prompt)
	if r.Usage.PromptTokens != n || r.Usage.CompletionTokens != 4 {
		t.Fatalf("usage %+v, want %d prompt and 4 completion tokens", *r.Usage, n)
	}
	if lp == nil || len(lp.Tokens) != n+4 || len(lp.TokenLogprobs) != n+4 || len(lp.TopLogprobs) != n+4 || len(lp.TextOffset) != n+4 {
		t.Fatalf("logprobs %+v: want %d entries in every list", lp, n+4)
	}
	if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
		t.Errorf("first prompt token: logprob %v, top %v; want both null", lp.TokenLogprobs[0], lp.TopLogprobs[0])
	}
	if !strings.HasPrefix(c.Text, prompt) {
		t.Errorf("text %q does not start with the prompt", c.Text)
	}
	// The tokens come back as ids: the whole sequence, prompt and output.
	seq := make([]int32, n+4)
	for i, s := range lp.Tokens {
		id, err := strconv.Atoi(strings.TrimPrefix(s, "token_id:"))
		if err != nil || !strings.HasPrefix(s, "token_id:") {
			t.Fatalf("token %q is not token_id:N", s)
		}
		seq[i] = int32(id)
	}
	if got := e.tok.Decode(seq[:n]); got != prompt {
		t.Errorf("prompt tokens decode to %q", got)
	}
	want := forwardLogprobs(t, seq)
	for i := 1; i < n+4; i++ {
		got := lp.TokenLogprobs[i]
		if got == nil || math.Abs(*got-float64(want[i])) > 1e-5 {
			t.Errorf("token %d (%s): logprob %v, want log-softmax %v", i, lp.Tokens[i], got, want[i])
		}
		if len(lp.TopLogprobs[i]) != 2 {
			t.Errorf("token %d: top_logprobs %v, want 2 entries", i, lp.TopLogprobs[i])
		}
		if lp.TextOffset[i] < lp.TextOffset[i-1] {
			t.Errorf("text_offset %v decreases at %d", lp.TextOffset, i)
		}
	}

	// Sending the ids back as the prompt echoes exactly the same tokens.
	again := e.complete(map[string]any{"prompt": seq, "echo": true, "logprobs": 0, "max_tokens": 0, "return_tokens_as_token_ids": true})
	if got := strings.Join(again.Choices[0].Logprobs.Tokens, ","); got != strings.Join(lp.Tokens, ",") {
		t.Errorf("echo of the returned ids gave tokens %s, want %s", got, strings.Join(lp.Tokens, ","))
	}
}

func TestCompletionEchoWithZeroMaxTokensReturnsThePromptOnly(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, stream := range []bool{false, true} {
		body := map[string]any{"model": "glmbench-nano", "prompt": "Hello there", "echo": true, "logprobs": 1, "max_tokens": 0}
		if !stream {
			r := e.complete(body)
			c := r.Choices[0]
			if c.Text != "Hello there" || c.FinishReason == nil || *c.FinishReason != "length" || r.Usage.CompletionTokens != 0 {
				t.Errorf("text %q finish %v usage %+v: want the prompt, length, 0 completion tokens", c.Text, c.FinishReason, *r.Usage)
			}
			if c.Logprobs == nil || len(c.Logprobs.Tokens) != len("Hello there") || c.Logprobs.TokenLogprobs[0] != nil {
				t.Errorf("logprobs %+v: want the prompt's, the first null", c.Logprobs)
			}
			continue
		}
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
		payloads := e.stream("/v1/completions", body)
		if len(payloads) != 4 || payloads[3] != "[DONE]" {
			t.Fatalf("stream %q: want echo, finish, usage, [DONE]", payloads)
		}
		echo := decode[completionResult](t, []byte(payloads[0]))
		if echo.Choices[0].Text != "Hello there" || echo.Choices[0].Logprobs.TokenLogprobs[0] != nil {
			t.Errorf("echo chunk %s", payloads[0])
		}
		if u := decode[completionResult](t, []byte(payloads[2])); len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 11 {
			t.Errorf("usage chunk %s: want choices [] and 11 prompt tokens", payloads[2])
		}
	}
}

func TestCompletionPromptForms(t *testing.T) {
	e := newEnv(t, envConfig{})
	ids := []int{72, 105, 33} // "Hi!"
	tests := []struct {
		name   string
		prompt any
	}{
		{"a string", "Hi!"},
		{"a list of token ids", ids},
		{"a one-element list of a string", []string{"Hi!"}},
		{"a one-element list of token ids", [][]int{ids}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.complete(map[string]any{"prompt": tc.prompt, "max_tokens": 2, "echo": true, "ignore_eos": true})
			if r.Usage.PromptTokens != 3 || r.Usage.CompletionTokens != 2 || !strings.HasPrefix(r.Choices[0].Text, "Hi!") {
				t.Errorf("usage %+v text %q: want 3 prompt tokens, 2 completion tokens, text from Hi!", *r.Usage, r.Choices[0].Text)
			}
		})
	}
}

func TestCompletionStreamMatchesNonStream(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := map[string]any{"model": "glmbench-nano", "prompt": "abc", "max_tokens": 6, "temperature": 0, "ignore_eos": true, "logprobs": 1}
	whole := e.complete(body)
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	payloads := e.stream("/v1/completions", body)
	var text string
	var tokens int
	var finish string
	for i, p := range payloads {
		if p == "[DONE]" {
			if i != len(payloads)-1 {
				t.Fatalf("[DONE] before the end: %q", payloads)
			}
			continue
		}
		c := decode[completionResult](t, []byte(p))
		if c.Object != "text_completion" {
			t.Errorf("chunk %s: object %q", p, c.Object)
		}
		if len(c.Choices) == 0 {
			if c.Usage == nil || c.Usage.CompletionTokens != 6 || i != len(payloads)-2 {
				t.Errorf("usage chunk %s", p)
			}
			continue
		}
		text += c.Choices[0].Text
		if lp := c.Choices[0].Logprobs; lp != nil {
			tokens += len(lp.Tokens)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if text != whole.Choices[0].Text || finish != "length" || tokens != 6 {
		t.Errorf("stream text %q finish %q with %d logprob tokens; non-stream %q", text, finish, tokens, whole.Choices[0].Text)
	}
}

func TestDecoderHoldsBackOnlyWhatCouldBeAStopString(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	d := newDecoder(tok, false, false, true, []string{"abc", "bd"}, 0)
	steps := []struct {
		in       string
		released string
	}{
		{"x", "x"},
		{"a", ""}, // could start abc
		{"b", ""}, // ab could become abc; b could become bd
		{"x", "abx"},
		{"b", ""},
		{"c", "bc"}, // "bc" cannot become bd or abc
		{"a", ""},
		{"b", ""},
		{"c", ""}, // abc matched
	}
	for i, s := range steps {
		d.add(int32(s.in[0]), nil, false)
		pieces, _ := d.take()
		got := ""
		for _, p := range pieces {
			got += p.text
		}
		if got != s.released {
			t.Fatalf("step %d (%q): released %q, want %q", i, s.in, got, s.released)
		}
	}
	if !d.stopped || d.matched != "abc" || d.n != len(steps) {
		t.Errorf("stopped %v matched %q after %d tokens", d.stopped, d.matched, d.n)
	}
}

func TestLogprobJSONIsAlwaysFinite(t *testing.T) {
	for _, v := range []float32{float32(math.Inf(-1)), float32(math.NaN()), -1e30} {
		b, _ := logprob(v).MarshalJSON()
		if string(b) != "-9999" {
			t.Errorf("logprob %v encodes as %s, want -9999", v, b)
		}
	}
	if b, _ := logprob(-0.5).MarshalJSON(); string(b) != "-0.5" {
		t.Errorf("logprob -0.5 encodes as %s", b)
	}
}

func TestCompletionStopStringInAStream(t *testing.T) {
	tok, _ := tokenizer.New(tokenizer.MinVocabSize)
	x := newScript(ids("hello world", tok.EndOfText()), tok.EndOfText())
	x.delay = time.Millisecond
	e := newEnv(t, envConfig{script: x})
	body := map[string]any{"model": "glmbench-nano", "prompt": "say", "stop": []string{"lo w"}, "max_tokens": 32,
		"temperature": 0, "stream": true, "logprobs": 0}
	var text, finish string
	var tokens int
	for _, p := range e.stream("/v1/completions", body) {
		if p == "[DONE]" {
			continue
		}
		c := decode[completionResult](t, []byte(p))
		text += c.Choices[0].Text
		if lp := c.Choices[0].Logprobs; lp != nil {
			tokens += len(lp.Tokens)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	// The tokens up to the one that completed the stop string are counted.
	if text != "hel" || finish != "stop" || tokens != len("hello w") {
		t.Errorf("text %q finish %q logprob tokens %d; want hel, stop, 7", text, finish, tokens)
	}
	waitFor(t, "the KV pool to be free", func() bool { return e.sched.Stats().KVUsedTokens == 0 })
}
