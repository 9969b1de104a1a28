package endpointstest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tgi personality against what TGI's router does (tgi.go names the
// files): each truth is computed from the fake's model (model.go).

func TestTGIStatesItsLimitsInInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		o               Options
		inputKey        string
		wantIn, wantTot float64
	}{
		{"3.x, --max-total-tokens 4096 alone: max_input_tokens 4095", Options{}, "max_input_tokens", 4095, 4096},
		{"3.x with --max-input-tokens 1024 --max-total-tokens 2048", Options{Context: 2048, TGI: TGIOptions{MaxInput: 1024}}, "max_input_tokens", 1024, 2048},
		{"1.x: max_input_length", Options{Context: 2048, TGI: TGIOptions{MaxInput: 1024, LegacyInfo: true}}, "max_input_length", 1024, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Start(t, TGI, tc.o)
			v := get(t, p.URL+"/info").json(t)
			if num(v[tc.inputKey]) != tc.wantIn || num(v["max_total_tokens"]) != tc.wantTot || v["model_id"] != p.Opts.Model {
				t.Errorf("/info %v; want %s %v, max_total_tokens %v, model_id %s", v, tc.inputKey, tc.wantIn, tc.wantTot, p.Opts.Model)
			}
		})
	}
}

func TestTGIListsItsModelAndAnswersHealthAndUnknownRoutesBare(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{Model: "org/m"})
	v := get(t, p.URL+"/v1/models").json(t)
	data, _ := v["data"].([]any)
	card, _ := data[0].(map[string]any)
	if v["object"] != "list" || len(data) != 1 || card["id"] != "org/m" || card["owned_by"] != "org/m" || num(card["created"]) != 0 {
		t.Errorf("/v1/models %s", get(t, p.URL+"/v1/models").body)
	}
	if r := get(t, p.URL+"/health"); r.status != 200 || len(r.body) != 0 {
		t.Errorf("/health %d %q; want 200, empty", r.status, r.body)
	}
	if r := get(t, p.URL+"/get_server_info"); r.status != 404 || len(r.body) != 0 {
		t.Errorf("an unknown route: %d %q; want a bare 404", r.status, r.body)
	}
	if r := get(t, p.URL+"/metrics"); r.status != 200 || !strings.Contains(string(r.body), "tgi_queue_size") {
		t.Errorf("/metrics %d %s", r.status, r.body)
	}
}

func TestTGIGuardsOnlyItsGenerationRoutesWithTheKey(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{APIKey: "k-123"})
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2)); r.status != 401 || len(r.body) != 0 {
		t.Errorf("no key: %d %q; want a bare 401", r.status, r.body)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2), "Authorization", "Bearer k-123"); r.status != 200 {
		t.Errorf("the key: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/info", "/health", "/v1/models", "/metrics"} {
		if r := get(t, p.URL+path); r.status != 200 {
			t.Errorf("%s without the key: %d; want 200 (open)", path, r.status)
		}
	}
}

func TestTGIStreamsChatWithoutARoleChunkAndUsageOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{})
	prompt := "the cat sat"
	for _, asked := range []bool{false, true} {
		content := streamed(t, p.BaseURL()+"/chat/completions", withUsage(chatBody(p.Opts.Model, prompt, 5, "stream", true), asked)).events
		if asked {
			content = usageApart(t, content, ChatPromptTokens([]string{prompt}), 5)
		}
		// One chunk per token, each a delta of role and content, the last
		// carrying finish_reason; none carries usage.
		if len(content) != 5 {
			t.Fatalf("%d content chunks, want 5", len(content))
		}
		for i, ev := range content {
			c := choice0(ev)
			d, _ := c["delta"].(map[string]any)
			if d["role"] != "assistant" || d["content"] == "" || ev["usage"] != nil || ev["object"] != "chat.completion.chunk" {
				t.Errorf("chunk %d: %v", i, ev)
			}
			if want := any(nil); i == 4 {
				if c["finish_reason"] != "length" {
					t.Errorf("last chunk's finish_reason %v, want length", c["finish_reason"])
				}
			} else if c["finish_reason"] != want {
				t.Errorf("chunk %d: finish_reason %v", i, c["finish_reason"])
			}
		}
	}
}

func TestTGIEndsACompletionsStreamWithUsageAndNamesTheEOSTokenThere(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{EOSAfter: 3})
	s := readStream(t, post(t, p.BaseURL()+"/completions", map[string]any{"model": p.Opts.Model, "prompt": "the cat sat", "max_tokens": 8, "stream": true}).body)
	if !s.done || len(s.events) != 3 {
		t.Fatalf("%d events, done %v", len(s.events), s.done)
	}
	last := s.events[2]
	u, _ := last["usage"].(map[string]any)
	if choice0(last)["finish_reason"] != "eos_token" || num(u["prompt_tokens"]) != 3 || num(u["completion_tokens"]) != 3 {
		t.Errorf("last chunk %v; want finish_reason eos_token and usage 3+3 (no include_usage asked)", last)
	}
	if choice0(s.events[0])["finish_reason"] != "" {
		t.Errorf("first chunk's finish_reason %v, want \"\"", choice0(s.events[0])["finish_reason"])
	}
	// Chat, and a whole completion, say "stop" for it.
	v := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 8)).json(t)
	if choice0(v)["finish_reason"] != "stop" {
		t.Errorf("chat: finish_reason %v, want stop", choice0(v)["finish_reason"])
	}
}

func TestTGIRefusesPastItsLimitsWith422AndInAStreamWith200(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{Context: 2048, TGI: TGIOptions{MaxInput: 1024}})
	long := filler(1500) // 1,500 tokens of content
	P := ChatPromptTokens([]string{long})
	short := "the cat"
	Ps := ChatPromptTokens([]string{short})
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"prompt plus max_tokens past max_total_tokens", chatBody(p.Opts.Model, short, 2045),
			fmt.Sprintf("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: %d `inputs` tokens and 2045 `max_new_tokens`", Ps)},
		{"a prompt past max_input_tokens within the total", chatBody(p.Opts.Model, long, 16),
			fmt.Sprintf("Input validation error: `inputs` must have less than 1024 tokens. Given: %d", P)},
		{"max_tokens 0", chatBody(p.Opts.Model, short, 0), "Input validation error: `max_new_tokens` must be strictly positive"},
		{"top_logprobs past 5", chatBody(p.Opts.Model, short, 2, "logprobs", true, "top_logprobs", 6),
			"Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 6"},
		// validate checks max_new_tokens == 0 before top_n_tokens, and both
		// before the prompt is measured.
		{"max_tokens 0 with top_logprobs past 5", chatBody(p.Opts.Model, long, 0, "logprobs", true, "top_logprobs", 6),
			"Input validation error: `max_new_tokens` must be strictly positive"},
		{"top_logprobs past 5 with a prompt past max_input_tokens", chatBody(p.Opts.Model, long, 16, "logprobs", true, "top_logprobs", 6),
			"Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, p.BaseURL()+"/chat/completions", tc.body)
			v := r.json(t)
			if r.status != 422 || v["error"] != tc.want || v["error_type"] != "validation" {
				t.Errorf("%d %s; want 422 %q", r.status, r.body, tc.want)
			}
			tc.body["stream"] = true
			r = post(t, p.BaseURL()+"/chat/completions", tc.body)
			s := readStream(t, r.body)
			if r.status != 200 || len(s.events) != 1 || s.events[0]["error"] != tc.want || !s.done {
				t.Errorf("streamed: %d %s; want 200, one error event, [DONE]", r.status, r.body)
			}
		})
	}
}

func TestTGIWithoutMaxTokensGeneratesWhatTheTotalLeavesOnChatAnd100OnCompletions(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{Context: 256})
	b := chatBody(p.Opts.Model, "the cat", 0)
	delete(b, "max_tokens")
	// max_completion_tokens is no field of TGI's ChatRequest: ignored.
	b["max_completion_tokens"] = 4
	v := post(t, p.BaseURL()+"/chat/completions", b).json(t)
	u, _ := v["usage"].(map[string]any)
	if want := 256 - ChatPromptTokens([]string{"the cat"}); num(u["completion_tokens"]) != float64(want) {
		t.Errorf("chat: %v completion tokens, want %d (256 less the prompt)", u["completion_tokens"], want)
	}
	v = post(t, p.BaseURL()+"/completions", map[string]any{"model": "x", "prompt": "the cat"}).json(t)
	u, _ = v["usage"].(map[string]any)
	if num(u["completion_tokens"]) != 100 {
		t.Errorf("completions: %v completion tokens, want 100", u["completion_tokens"])
	}
}

func TestTGIIgnoresIgnoreEOSAndNAndAnyModelName(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{EOSAfter: 2})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("tgi-other", "hi", 6, "ignore_eos", true, "n", 3))
	v := r.json(t)
	cs, _ := v["choices"].([]any)
	u, _ := v["usage"].(map[string]any)
	// ignore_eos is an unknown field, so the EOS after 2 tokens ends it.
	if r.status != 200 || len(cs) != 1 || num(u["completion_tokens"]) != 2 || choice0(v)["finish_reason"] != "stop" {
		t.Errorf("%d %s; want one choice of 2 tokens ending stop", r.status, r.body)
	}
}

func TestTGIAnswersPastMaxConcurrentRequestsModelIsOverloaded(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{TTFT: 300 * time.Millisecond, TGI: TGIOptions{MaxConcurrent: 1}})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hold", 2))
	}()
	// Wait until the first holds the one permit (the fake counts it).
	if !eventually(5*time.Second, func() bool { return inflight(p) == 1 }) {
		t.Fatal("the first request never arrived")
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2))
	if v := r.json(t); r.status != 429 || v["error"] != "Model is overloaded" || v["error_type"] != "overloaded" {
		t.Errorf("%d %s; want 429 Model is overloaded", r.status, r.body)
	}
	sr := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 2, "stream", true))
	if s := readStream(t, sr.body); sr.status != 200 || len(s.events) != 1 || s.events[0]["error_type"] != "overloaded" {
		t.Errorf("streamed: %d %s; want 200 and one overloaded error event", sr.status, sr.body)
	}
	wg.Wait()
}

func TestTGITokenizesInputsIntoTokensWithOffsets(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{})
	r := post(t, p.URL+"/tokenize", map[string]any{"inputs": "the cat"})
	want := fmt.Sprintf(`[{"id":%d,"start":0,"stop":3,"text":"the"},{"id":%d,"start":3,"stop":7,"text":" cat"}]`, p.vocab.id("the"), p.vocab.id(" cat"))
	if r.status != 200 || string(r.body) != want {
		t.Errorf("%d %s; want %s", r.status, r.body, want)
	}
	if r := post(t, p.URL+"/tokenize", map[string]any{"prompt": "x"}); r.status != 422 {
		t.Errorf("no inputs: %d, want 422", r.status)
	}
}

func TestTGIRefusesTokenIDPromptsAndBodiesThatAreNoJSONAsAxumDoes(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{})
	if r := post(t, p.BaseURL()+"/completions", map[string]any{"model": "x", "prompt": []int{1, 2, 3}, "max_tokens": 2}); r.status != 422 || !strings.Contains(string(r.body), "PromptDeserializer") {
		t.Errorf("token ids: %d %s; want 422 naming the prompt's enum", r.status, r.body)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", `{"messages": [`); r.status != 400 || !strings.HasPrefix(string(r.body), "Failed to parse the request body as JSON") {
		t.Errorf("no JSON: %d %s; want 400", r.status, r.body)
	}
}

func TestTGIMetricsCountWhatItAnsweredInTheScrapesNames(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{Context: 64})
	post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "the cat sat", 5))
	post(t, p.BaseURL()+"/completions", map[string]any{"model": "x", "prompt": "the cat", "max_tokens": 3, "stream": true})
	post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 500)) // a 422
	prompt := ChatPromptTokens([]string{"the cat sat"}) + 2
	body := string(get(t, p.URL+"/metrics").body)
	for _, want := range []string{"tgi_request_count 3\n", "tgi_request_success 2\n",
		fmt.Sprintf("tgi_request_input_length_sum %d\n", prompt), "tgi_request_input_length_count 2\n",
		"tgi_request_generated_tokens_sum 8\n", "tgi_batch_current_size 0\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

func TestTGISaysStopSequenceForAStopString(t *testing.T) {
	t.Parallel()
	p := Start(t, TGI, Options{})
	// The greedy answer without a stop string, to pick one from its middle.
	free := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "the cat", 12, "temperature", 0)).json(t)
	text := choice0(free)["message"].(map[string]any)["content"].(string)
	words := strings.Fields(text)
	stop := " " + words[len(words)/2]
	v := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "the cat", 12, "temperature", 0, "stop", []string{stop})).json(t)
	got := choice0(v)["message"].(map[string]any)["content"].(string)
	if choice0(v)["finish_reason"] != "stop_sequence" || got != text[:strings.Index(text, stop)] {
		t.Errorf("stop %q: %q, finish_reason %v; want %q and stop_sequence", stop, got, choice0(v)["finish_reason"], text[:strings.Index(text, stop)])
	}
}
