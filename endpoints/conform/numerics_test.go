package conform

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The reference engine is deterministic and batch-invariant by
// construction (every reduction in a fixed order, whatever the batch): the
// same request gives the same tokens and logprobs bit for bit, 8 times and
// inside a burst of 64.
func TestTheBuiltInEngineIsDeterministicAndBatchInvariant(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	cfg := testConfig(e.BaseURL(), e.ModelName())
	cfg.Only = []string{"determinism", "batch-invariance"}
	res := run(t, cfg)
	// The answers' length depends on the run's nonce in the prompt (the
	// model may end before max_tokens 32), so the detail is matched around it.
	for id, want := range map[string]*regexp.Regexp{
		"determinism":      regexp.MustCompile(`8 answers \(3 in a row, then 5 at once\) identical: ([1-9]|[12][0-9]|3[0-2]) tokens each, with their logprobs and top-5 logprobs, bit for bit`),
		"batch-invariance": regexp.MustCompile(`inside a burst of 64 different prompts at once: ([1-9]|[12][0-9]|3[0-2]) tokens, with their logprobs and top-5 logprobs, identical bit for bit`),
	} {
		if r := res[id]; r.Status != string(Pass) || !want.MatchString(r.Detail) {
			t.Errorf("%s: %s %q, want a pass matching %q", id, r.Status, r.Detail, want)
		}
	}
}

// departure is how one answer of numericsFake departs from its prompt's
// true answer: every logprob from token lpAt on shifted by by, and the
// token at tokAt the second candidate (and every token after it another).
// -1 departs nowhere.
type departure struct {
	lpAt  int
	by    float64
	tokAt int
}

var nowhere = departure{lpAt: -1, tokAt: -1}

// numericsFake is a chat endpoint whose temperature-0 answer is a function
// of the prompt, 32 tokens of 4 characters each ("a17 ": a candidate's
// letter, then two digits from the prompt and the position), each with 5
// candidates of dyadic logprobs (exact in JSON), as depart says for each
// request: given the how-manieth request of its prompt it is (from 0) and
// whether another request was in flight meanwhile. Every request is held
// for loadWait, watching for company, so a burst's requests see each
// other: one the machine schedules late, after the others were sent, still
// finds them in flight (a request answered at the first sight of company
// let 63 others finish before a late one arrived, and it then looked
// alone). Requests sent one after another never overlap.
type numericsFake struct {
	// plain answers carry no logprobs, plainLoaded those under load;
	// refuse refuses logprobs with a 400.
	plain, plainLoaded, refuse bool
	depart                     func(n int, loaded bool) departure

	mu       sync.Mutex
	seen     map[string]int
	inFlight int
}

const loadWait = 200 * time.Millisecond

func (f *numericsFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Logprobs  bool   `json:"logprobs"`
		Top       int    `json:"top_logprobs"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
		return
	}
	if f.refuse && req.Logprobs {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error": {"message": "logprobs are not supported"}}`)
		return
	}
	prompt := req.Messages[0].Content
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	n := f.seen[prompt]
	f.seen[prompt]++
	f.inFlight++
	f.mu.Unlock()
	loaded := false
	for deadline := time.Now().Add(loadWait); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		f.mu.Lock()
		loaded = loaded || f.inFlight > 1
		f.mu.Unlock()
	}
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	d := f.depart(n, loaded)
	h := 0
	for _, c := range prompt {
		h = (h*31 + int(c)) % 100
	}
	var text strings.Builder
	var content []map[string]any
	for i := range min(req.MaxTokens, 32) {
		shift := 0.0
		if d.lpAt >= 0 && i >= d.lpAt {
			shift = d.by
		}
		digits := (h + i) % 100
		if d.tokAt >= 0 && i > d.tokAt {
			digits = (digits + 1) % 100 // another context, other tokens
		}
		var top []map[string]any
		for j := range 5 {
			tok := fmt.Sprintf("%c%02d ", 'a'+j, digits)
			top = append(top, map[string]any{"token": tok, "logprob": -0.5 - 0.25*float64(j) - 0.125*float64(i%4) + shift, "bytes": byteInts(tok)})
		}
		chosen := 0
		if i == d.tokAt {
			chosen = 1
		}
		text.WriteString(top[chosen]["token"].(string))
		content = append(content, map[string]any{"token": top[chosen]["token"], "logprob": top[chosen]["logprob"],
			"bytes": top[chosen]["bytes"], "top_logprobs": top[:min(req.Top, 5)]})
	}
	choice := map[string]any{"index": 0, "finish_reason": "length", "logprobs": nil,
		"message": map[string]any{"role": "assistant", "content": text.String()}}
	if req.Logprobs && !f.plain && !(f.plainLoaded && loaded) {
		choice["logprobs"] = map[string]any{"content": content}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{choice}, "usage": map[string]int{"prompt_tokens": 9, "completion_tokens": len(content), "total_tokens": 9 + len(content)}})
}

// Against a fake whose answers depart where the test says, each check
// fails (or passes) with the departure's position and size in its detail:
// the answers are measured, not only told apart.
func TestTheNumericsChecksSayWhereAndHowFarAnswersDepart(t *testing.T) {
	t.Parallel()
	// The 6th and 8th requests of a prompt (both among the 5 at once)
	// depart: one by 0.25 in its logprobs from token 12, one in its token
	// 20.
	eachTime := func(n int, _ bool) departure {
		switch n {
		case 5:
			return departure{lpAt: 12, by: 0.25, tokAt: -1}
		case 7:
			return departure{lpAt: -1, tokAt: 20}
		}
		return nowhere
	}
	// Under load the logprobs drift by 0.125 from token 7, the tokens stay.
	underLoad := func(_ int, loaded bool) departure {
		if loaded {
			return departure{lpAt: 7, by: 0.125, tokAt: -1}
		}
		return nowhere
	}
	// Under load token 9 is another: character 36 of the text.
	tokenUnderLoad := func(_ int, loaded bool) departure {
		if loaded {
			return departure{lpAt: -1, tokAt: 9}
		}
		return nowhere
	}
	for _, tc := range []struct {
		name string
		fake *numericsFake
		// want maps each check to its status and what its detail says.
		want map[string][]string
	}{
		{"answers that differ each time", &numericsFake{depart: eachTime}, map[string][]string{
			"determinism": {"fail", "not deterministic: 8 answers (3 in a row, then 5 at once) give 3 distinct outputs",
				"the earliest at token 12 (counting from 0: the same token, another logprob) of 32 tokens", "tokens part at token 20",
				"the largest |Δ logprob| 0.25;", "--enable-deterministic-inference"},
			// The prompt's 1st, 2nd and 3rd requests do not depart.
			"batch-invariance": {"pass", "32 tokens, with their logprobs and top-5 logprobs, identical bit for bit"}}},
		{"logprobs that drift under load", &numericsFake{depart: underLoad}, map[string][]string{
			"determinism": {"fail", "give 2 distinct outputs", "the earliest at token 7 (counting from 0: the same token, another logprob)",
				"their tokens never part", "the largest |Δ logprob| 0.125;"},
			"batch-invariance": {"fail", "not batch-invariant: the prompt alone and inside a burst of 64 at once differ from token 7 (counting from 0: the same token, another logprob) of 32 tokens",
				"the tokens never part", "the largest |Δ logprob| 0.125;", "VLLM_BATCH_INVARIANT=1"}}},
		{"no logprobs, a token that changes under load", &numericsFake{plain: true, depart: tokenUnderLoad}, map[string][]string{
			"determinism": {"fail", "the earliest at character 36 (counting from 0: the text differs) of 128 characters",
				"the answers carry no logprobs: their texts compared, character by character"},
			"batch-invariance": {"fail", "differ from character 36 (counting from 0: the text differs) of 128 characters", "the characters part at character 36",
				"the answers carry no logprobs: their texts compared"}}},
		{"no logprobs, the same answers", &numericsFake{plain: true, depart: func(int, bool) departure { return nowhere }}, map[string][]string{
			"determinism":      {"pass", "identical: 128 characters each, the same text and finish_reason; the answers carry no logprobs"},
			"batch-invariance": {"pass", "128 characters, the same text and finish_reason; the answers carry no logprobs"}}},
		// Answers with and without logprobs are all compared by text, so
		// that every position counts characters.
		{"logprobs only alone, the same text", &numericsFake{plainLoaded: true, depart: func(int, bool) departure { return nowhere }}, map[string][]string{
			"determinism":      {"pass", "identical: 128 characters each, the same text and finish_reason; the answers carry no logprobs"},
			"batch-invariance": {"pass", "128 characters, the same text and finish_reason; the answers carry no logprobs"}}},
		// The second request's logprobs drift from token 3, but under load
		// the answers carry none: by text the second is the first's, and
		// the loaded ones depart at character 36, never at "token 3".
		{"logprobs only alone, a token that changes under load", &numericsFake{plainLoaded: true, depart: func(n int, loaded bool) departure {
			if n == 1 {
				return departure{lpAt: 3, by: 0.5, tokAt: -1}
			}
			return tokenUnderLoad(n, loaded)
		}}, map[string][]string{
			"determinism": {"fail", "give 2 distinct outputs", "the earliest at character 36 (counting from 0: the text differs) of 128 characters",
				"their characters part at character 36", "the answers carry no logprobs"},
			"batch-invariance": {"fail", "differ from character 36", "the answers carry no logprobs"}}},
		{"logprobs refused", &numericsFake{refuse: true, depart: tokenUnderLoad}, map[string][]string{
			"determinism":      {"fail", "character 36", "the endpoint refuses logprobs (HTTP 400: logprobs are not supported): their texts compared"},
			"batch-invariance": {"fail", "character 36", "the endpoint refuses logprobs (HTTP 400"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.fake)
			t.Cleanup(srv.Close)
			cfg := testConfig(srv.URL, "fake")
			cfg.Only = []string{"determinism", "batch-invariance"}
			res := run(t, cfg)
			for id, want := range tc.want {
				r := res[id]
				if r.Status != want[0] {
					t.Errorf("%s: %s %q, want %s", id, r.Status, r.Detail, want[0])
					continue
				}
				for _, w := range want[1:] {
					if !strings.Contains(r.Detail, w) {
						t.Errorf("%s: %q does not say %q", id, r.Detail, w)
					}
				}
			}
		})
	}
}

// byteInts is a token's bytes as OpenAI spells them: a list of integers.
func byteInts(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// compare measures from the first difference: tokens apart end the
// comparison (the contexts differ after them), logprobs apart before them
// count toward the largest |Δ|, and without logprobs on either side the
// texts are compared by character.
func TestCompareFindsTheFirstDivergenceAndTheLargestLogprobGap(t *testing.T) {
	t.Parallel()
	tok := func(name string, lp float64, top ...tokenLogprob) tokenLogprob {
		return tokenLogprob{Token: name, Logprob: lp, TopLogprobs: top}
	}
	base := sample{finish: "length", text: []rune("ab cd ef"), toks: []tokenLogprob{
		tok("ab", -0.5, tok("ab", -0.5), tok("xy", -1)),
		tok("cd", -0.25, tok("cd", -0.25), tok("zz", -2)),
		tok("ef", -1, tok("ef", -1), tok("gh", -1.5)),
	}}
	edit := func(f func(s *sample)) sample {
		s := sample{finish: base.finish, text: slices.Clone(base.text), toks: slices.Clone(base.toks)}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name        string
		b           sample
		at, tokenAt int
		delta       float64
		byText      bool
		what        string
	}{
		{"the same answer is identical", base, -1, -1, 0, false, ""},
		{"a logprob apart at 1 is a divergence there, the tokens never part", edit(func(s *sample) {
			s.toks[1] = tok("cd", -0.375, tok("cd", -0.375), tok("zz", -2))
		}), 1, -1, 0.125, false, "another logprob"},
		{"a top_logprobs entry apart counts, the chosen token the same", edit(func(s *sample) {
			s.toks[2] = tok("ef", -1, tok("ef", -1), tok("gh", -1.75))
		}), 2, -1, 0.25, false, "other top_logprobs"},
		// At the tokens' divergence the context is the same: the ranked
		// tokens both name are compared (ef -1 against -1.5: 0.5).
		{"tokens apart at 2 end the comparison there", edit(func(s *sample) {
			s.toks[2] = tok("gh", -1, tok("gh", -1), tok("ef", -1.5))
		}), 2, 2, 0.5, false, "the tokens differ"},
		{"an answer that ends early parts there", edit(func(s *sample) { s.toks = s.toks[:2] }), 2, 2, 0, false, "ends there"},
		{"another finish_reason is a difference at the end", edit(func(s *sample) { s.finish = "stop" }), 3, -1, 0, false, "finish_reason"},
		{"without logprobs the text is compared by character", edit(func(s *sample) { s.toks, s.text[4] = nil, 'X' }), 4, 4, 0, true, "the text differs"},
	} {
		g := compare(func(s string) string { return s }, base, tc.b)
		if g.at != tc.at || g.tokenAt != tc.tokenAt || g.delta != tc.delta || g.byText != tc.byText || !strings.Contains(g.what, tc.what) {
			t.Errorf("%s: %+v, want at %d, tokens at %d, |Δ| %g, by text %t, saying %q", tc.name, g, tc.at, tc.tokenAt, tc.delta, tc.byText, tc.what)
		}
	}
}

// An answer past numericsLimit is read no further and named, so that a
// burst of 64 holds at most 64 of the limit: here 2 MiB of content, which
// the chat check (its limit answerLimit) reads whole.
func TestANumericsAnswerPastItsLimitIsNamedNotRead(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-big", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "length",
				"message": map[string]any{"role": "assistant", "content": strings.Repeat("tide ", 2<<20/5)}}}})
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL, "fake")
	cfg.Only = []string{"determinism", "batch-invariance"}
	res := run(t, cfg)
	if r := res["chat"]; r.Status != string(Pass) {
		t.Errorf("chat: %s %q, want pass", r.Status, r.Detail)
	}
	want := fmt.Sprintf("larger than %d KiB", numericsLimit>>10)
	for _, id := range cfg.Only {
		wantResult(t, res, id, Fail, want)
	}
}

// endpointstest's personalities answer temperature 0 as a function of the
// prompt (the same every time, whatever else is in flight): both checks
// pass against each, with their logprobs, so a suite run against them
// (cmd's tests) fails nothing new.
func TestThePersonalitiesAreDeterministicAndBatchInvariant(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{endpointstest.VLLM, endpointstest.SGLang, endpointstest.LlamaCpp, endpointstest.OpenAI} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, kind, endpointstest.Options{})
			cfg := testConfig(p.BaseURL(), p.Opts.Model)
			cfg.Only = []string{"determinism", "batch-invariance"}
			res := run(t, cfg)
			for _, id := range cfg.Only {
				if r := res[id]; r.Status != string(Pass) {
					t.Errorf("%s: %s %q, want pass", id, r.Status, r.Detail)
				}
			}
		})
	}
}
