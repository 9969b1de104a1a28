package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sim"
	openai "github.com/sashabaranov/go-openai"
)

// start runs a small engine on a free port for one test, tweaked (nil:
// the test defaults).
func start(t *testing.T, tweak func(*engine.Options)) *engine.Engine {
	t.Helper()
	return enginetest.Start(t, enginetest.With(tweak)).Engine
}

func client(e *engine.Engine) *openai.Client {
	cfg := openai.DefaultConfig("unused")
	cfg.BaseURL = e.BaseURL()
	return openai.NewClientWithConfig(cfg)
}

// streamChat streams a chat through go-openai with include_usage and
// returns its text (reasoning and content), usage and chunk count.
func streamChat(t *testing.T, e *engine.Engine, prompt string, maxTokens int) (string, *openai.Usage, int) {
	t.Helper()
	stream, err := client(e).CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model:         e.ModelName(),
		Messages:      []openai.ChatCompletionMessage{{Role: "user", Content: prompt}},
		MaxTokens:     maxTokens,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	var usage *openai.Usage
	chunks := 0
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), usage, chunks
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		for _, c := range r.Choices {
			text.WriteString(c.Delta.Content + c.Delta.ReasoningContent)
		}
		if r.Usage != nil {
			usage = r.Usage
		}
	}
}

func TestTheGoOpenAIClientStreamsAChatWithUsage(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	_, usage, chunks := streamChat(t, e, "Say something.", 24)
	if usage == nil || usage.PromptTokens == 0 || usage.CompletionTokens == 0 || usage.CompletionTokens > 24 ||
		usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens || chunks < 2 {
		t.Fatalf("usage %+v after %d chunks", usage, chunks)
	}
}

func TestTheGoOpenAIClientReadsEchoLogprobs(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	prompt := "The quick brown fox"
	resp, err := client(e).CreateCompletion(context.Background(), openai.CompletionRequest{
		Model: e.ModelName(), Prompt: prompt, Echo: true, LogProbs: 1, MaxTokens: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].LogProbs
	// The byte-level tokenizer makes one token per byte; the output adds one.
	if len(lp.Tokens) != len(prompt)+1 || len(lp.TokenLogprobs) != len(prompt)+1 || resp.Usage.PromptTokens != len(prompt) {
		t.Fatalf("%d tokens, %d logprobs, usage %+v", len(lp.Tokens), len(lp.TokenLogprobs), resp.Usage)
	}
	if strings.Join(lp.Tokens[:len(prompt)], "") != prompt {
		t.Fatalf("echoed tokens %q", lp.Tokens)
	}
	// go-openai decodes the first prompt token's null as 0; every other is a log probability.
	for i, v := range lp.TokenLogprobs[1:] {
		if v >= 0 {
			t.Fatalf("token %d: logprob %v", i+1, v)
		}
	}
}

// chat posts a non-streamed chat and returns its text and usage.
func chat(t *testing.T, e *engine.Engine, body map[string]any) (string, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil || len(out.Choices) != 1 {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
	}
	m := out.Choices[0].Message
	return m.ReasoningContent + "|" + m.Content, out.Usage
}

func TestTemperatureZeroGivesTheSameTextAloneAndAmong64(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	req := func(i int) map[string]any {
		return map[string]any{"model": e.ModelName(), "temperature": 0, "max_tokens": 16,
			"messages": []map[string]string{{"role": "user", "content": "Tell me about request " + strings.Repeat("x", i)}}}
	}
	alone, _ := chat(t, e, req(0))
	var wg sync.WaitGroup
	got := make([]string, 64)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			if i%2 == 1 {
				n = i // the others ask other things
			}
			got[i], _ = chat(t, e, req(n))
		}()
	}
	wg.Wait()
	for i := 0; i < 64; i += 2 {
		if got[i] != alone {
			t.Fatalf("request %d among 64: %q, alone: %q", i, got[i], alone)
		}
	}
}

func TestThePrefixCacheHitsOnASharedPrefixAndMissesOnDistinctOnes(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	system := strings.Repeat("You are a careful assistant. ", 10)
	ask := func(sys, user string) float64 {
		_, u := chat(t, e, map[string]any{"model": e.ModelName(), "max_tokens": 2, "messages": []map[string]string{
			{"role": "system", "content": sys}, {"role": "user", "content": user}}})
		return u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)
	}
	if c := ask(system, "first question"); c != 0 {
		t.Fatalf("a first request hit the cache: %v tokens", c)
	}
	// The cache matches whole pages of 64 tokens.
	if c := ask(system, "second question"); c < float64(len(system)/64*64) {
		t.Fatalf("a shared prefix of %d tokens: %v cached", len(system), c)
	}
	if c := ask(strings.Repeat("Something else entirely. ", 10), "third"); c > 0 {
		t.Fatalf("a distinct prompt: %v cached tokens", c)
	}
}

func TestServerConfigAppliesKnownKeysAndListsTheRest(t *testing.T) {
	t.Parallel()
	o := engine.DefaultOptions()
	ignored, err := engine.ApplyServerConfig(filepath.Join("testdata", "sglang_args.json"), &o)
	if err != nil {
		t.Fatal(err)
	}
	s := o.Sched
	if s.MaxRunningRequests != 96 || s.MaxQueuedRequests != 256 || s.ChunkedPrefillSize != 2048 || s.PageSize != 64 ||
		s.SchedulePolicy != "lpm" || s.ScheduleConservativeness != 1.3 || s.StreamInterval != 4 || s.EnableMixedChunk ||
		s.MaxTotalTokens != 0 || o.ServedModelName != "glm-5-test" || o.Host != "0.0.0.0" || s.SpeculativeAlgorithm != "EAGLE" {
		t.Fatalf("applied: %+v %+v", s, o)
	}
	want := []string{"mem_fraction_static", "model_path", "reasoning_parser", "tool_call_parser", "tp_size"}
	if !slices.Equal(ignored, want) {
		t.Fatalf("ignored %v, want %v", ignored, want)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"page_size": "sixty-four"}`), 0o644)
	if _, err := engine.ApplyServerConfig(bad, &o); err == nil || !strings.Contains(err.Error(), "page_size") {
		t.Fatalf("err = %v", err)
	}
}

func TestTheReferenceSGLangDumpApplies(t *testing.T) {
	t.Parallel()
	o := engine.DefaultOptions()
	ignored, err := engine.ApplyServerConfig(filepath.Join("..", "..", "shared", "reference", "sglang_server_config.json"), &o)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("the SGLang dump of ../shared is not in this checkout")
	}
	if err != nil {
		t.Fatal(err)
	}
	s := o.Sched
	if s.PageSize != 64 || s.ChunkedPrefillSize != 4096 || s.SchedulePolicy != "lpm" || s.StreamInterval != 8 ||
		s.MaxRunningRequests != 1024 || s.ScheduleConservativeness != 0.18 || o.Port != 30000 || s.MaxQueuedRequests != 0 {
		t.Fatalf("applied: %+v, port %d", s, o.Port)
	}
	if !slices.Contains(ignored, "tp_size") || slices.Contains(ignored, "page_size") || len(ignored) < 400 {
		t.Fatalf("%d ignored keys", len(ignored))
	}
	// The applied settings run.
	o.Port, o.Host = 0, "127.0.0.1"
	o.Sched.MaxTotalTokens = 1 << 14
	e, err := engine.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	text, _ := chat(t, e, map[string]any{"model": e.ModelName(), "max_tokens": 20, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if text == "|" {
		t.Fatal("no text")
	}
}

func TestTheSimulatedExecutorStreamsKnownTokensAndRecordsTheTruth(t *testing.T) {
	t.Parallel()
	var truth bytes.Buffer
	var mu sync.Mutex
	e := start(t, func(o *engine.Options) {
		o.Executor = "sim"
		o.SimCost.StepOverhead = time.Millisecond
		o.Truth = lockedWriter{&mu, &truth}
	})
	if e.Model != nil || e.ModelName() != "glmbench-sim" {
		t.Fatalf("model %v, name %q", e.Model, e.ModelName())
	}
	text, usage, _ := streamChat(t, e, "0badcafe-000042 hello", 30)
	if usage == nil || usage.CompletionTokens != 30 {
		t.Fatalf("usage %+v", usage)
	}
	// The token after position p is 'a' + p mod 26; the first follows the
	// prompt's last position.
	var want strings.Builder
	for p := usage.PromptTokens - 1; p < usage.PromptTokens+29; p++ {
		want.WriteByte(byte('a' + p%26))
	}
	if text != want.String() {
		t.Errorf("text %q, want %q", text, want.String())
	}
	var line struct {
		Key     string  `json:"key"`
		Arrival int64   `json:"arrival_ns"`
		Events  []int64 `json:"events_ns"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		b := truth.Bytes()
		mu.Unlock()
		if len(b) > 0 || time.Now().After(deadline) {
			if err := json.Unmarshal(b, &line); err != nil {
				t.Fatalf("truth %q: %v", b, err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One event per token, unless the handler fell behind the scheduler and
	// sent the tokens it had in one event.
	n := len(line.Events)
	if line.Key != "0badcafe-000042" || n < 1 || n > 30 || line.Events[0] < line.Arrival || !slices.IsSorted(line.Events) {
		t.Fatalf("truth line %+v", line)
	}
	// A step is at least its 1 ms overhead, and 30 tokens take 30 steps.
	if d := time.Duration(line.Events[n-1] - line.Arrival); d < 30*time.Millisecond {
		t.Errorf("30 tokens in %v", d)
	}
	// Truth stamps are Unix times on this host's clock.
	if d := time.Since(time.Unix(0, line.Arrival)); d < 0 || d > time.Minute {
		t.Errorf("arrival %v ago", d)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func TestIdleKeepAliveConnectionsCloseAndStreamsOutliveTheBodyDeadline(t *testing.T) {
	t.Parallel()
	e := start(t, func(o *engine.Options) {
		o.Executor = "sim"
		o.SimCost.StepOverhead = 2 * time.Millisecond
		o.IdleTimeout = 100 * time.Millisecond
		o.BodyTimeout = 50 * time.Millisecond
	})
	// A stream of 60 steps (over 120 ms) is not cut by the 50 ms body deadline.
	text, usage, _ := streamChat(t, e, "hi", 60)
	if usage == nil || usage.CompletionTokens != 60 || text == "" {
		t.Fatalf("the stream ended early: usage %+v, text %q", usage, text)
	}
	// A keep-alive connection left idle is closed by the server.
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(e.BaseURL(), "http://"), "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("an idle connection was not closed by the server within 5 s: %v", err)
	}
}

func TestSpeculativeServingAnswersAsPlainServingAtTemperatureZero(t *testing.T) {
	t.Parallel()
	plain := start(t, nil)
	spec := start(t, func(o *engine.Options) {
		o.Sched.SpeculativeAlgorithm, o.Sched.SpeculativeNumSteps = "NEXTN", 3
	})
	body := func(e *engine.Engine) map[string]any {
		return map[string]any{"model": e.ModelName(), "max_tokens": 40, "temperature": 0, "ignore_eos": true,
			"messages": []map[string]string{{"role": "user", "content": "speculate on this"}}}
	}
	want, _ := chat(t, plain, body(plain))
	got, _ := chat(t, spec, body(spec))
	if got != want || want == "" {
		t.Fatalf("speculative %q, plain %q", got, want)
	}
	st := spec.Sched.Stats()
	if c := spec.Sched.Config(); st.SpecSteps == 0 || c.SpeculativeAlgorithm != "EAGLE" || c.SpeculativeNumDraftTokens != 4 || c.EnableMixedChunk {
		t.Fatalf("stats %+v, config %+v", st, c)
	}
}

func TestTheSimulatedExecutorServesAtItsSetAcceptLength(t *testing.T) {
	t.Parallel()
	e := start(t, func(o *engine.Options) {
		o.Executor, o.SimCost, o.SimAcceptLength = "sim", sim.CostModel{}, 3
		o.Sched.SpeculativeAlgorithm = "EAGLE"
	})
	_, usage, _ := streamChat(t, e, "0badcafe-000043 hello", 301)
	if usage == nil || usage.CompletionTokens != 301 {
		t.Fatalf("usage %+v", usage)
	}
	// 300 tokens after the first, 3 a step: 100 steps of 3 drafts, 2 taken.
	if st := e.Sched.Stats(); st.SpecSteps != 100 || st.SpecAccepted != 200 || st.AcceptLength() != 3 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := engine.Start(engine.Options{Executor: "sim", SimAcceptLength: 0.5, Port: 0, Host: "127.0.0.1"}); err == nil {
		t.Fatal("an accept length of 0.5 started")
	}
}
