package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/kernels"
)

// testPool is the KV pool of a test engine, in tokens.
const testPool = 4096

var nano struct {
	once sync.Once
	cfg  *model.Config
	w    *model.Weights
}

// nanoWeights synthesizes the nano model once for all tests.
func nanoWeights() (*model.Config, *model.Weights) {
	nano.once.Do(func() {
		nano.cfg, _ = model.Preset("nano")
		nano.w = model.Synth(nano.cfg, 1)
	})
	return nano.cfg, nano.w
}

// env is a running engine behind an httptest server.
type env struct {
	t       testing.TB
	srv     *Server
	sched   *sched.Scheduler
	http    *httptest.Server
	tok     *tokenizer.Tokenizer
	model   *model.Model // nil with a scripted executor
	metrics *Metrics
}

type envConfig struct {
	sched  sched.Config // pool, page size and context are filled in when 0
	opts   Options
	script *scriptExec // nil: the nano model
}

func newEnv(t testing.TB, c envConfig) *env {
	t.Helper()
	cfg, w := nanoWeights()
	tok, err := tokenizer.New(cfg.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.sched
	if sc.PageSize == 0 {
		sc.PageSize = 1
	}
	if sc.MaxTotalTokens == 0 {
		sc.MaxTotalTokens = testPool
	}
	if sc.ContextLength == 0 {
		sc.ContextLength = cfg.MaxPositionEmbeddings
	}
	e := &env{t: t, tok: tok, metrics: NewMetrics()}
	var exec sched.Executor
	if c.script != nil {
		// The script keys sequences by their first KV slot, which a shared
		// prefix would blur.
		sc.DisableRadixCache = true
	}
	kv := model.NewKVCacheNoMTP(cfg, sc.MaxTotalTokens/sc.PageSize, sc.PageSize)
	if c.script != nil {
		c.script.kv, c.script.vocab = kv, cfg.VocabSize
		exec = c.script
	} else {
		e.model = model.New(cfg, w, kernels.Default(), kv)
		exec = e.model
	}
	e.sched, err = sched.New(sc, exec, tok.EOS(), tokenizer.MinVocabSize, e.metrics)
	if err != nil {
		t.Fatal(err)
	}
	opts := c.opts
	if opts.ModelName == "" {
		opts.ModelName = "glmbench-nano"
	}
	e.srv = New(opts, e.sched, tok, e.metrics)
	go e.sched.Run()
	e.http = httptest.NewServer(e.srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
		e.http.Close()
	})
	return e
}

// post sends a JSON body and returns the status, headers and body.
func (e *env) post(path string, body any) (int, http.Header, []byte) {
	e.t.Helper()
	return e.do(context.Background(), http.MethodPost, path, body)
}

func (e *env) get(path string) (int, []byte) {
	e.t.Helper()
	code, _, b := e.do(context.Background(), http.MethodGet, path, nil)
	return code, b
}

func (e *env) do(ctx context.Context, method, path string, body any) (int, http.Header, []byte) {
	e.t.Helper()
	resp := e.open(ctx, method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// open sends a request and returns the response unread.
func (e *env) open(ctx context.Context, method, path string, body any) *http.Response {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.http.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// sseReader reads SSE data payloads one at a time.
type sseReader struct {
	t  testing.TB
	br *bufio.Reader
}

func newSSEReader(t testing.TB, r io.Reader) *sseReader {
	return &sseReader{t: t, br: bufio.NewReader(r)}
}

// next returns the next data payload, or "" at the end of the body. It
// checks the framing: every event is one `data: ` line and a blank line.
func (s *sseReader) next() string {
	s.t.Helper()
	line, err := s.br.ReadString('\n')
	if err == io.EOF && line == "" {
		return ""
	}
	if err != nil {
		s.t.Fatalf("reading the stream: %v (got %q)", err, line)
	}
	if !strings.HasPrefix(line, "data: ") {
		s.t.Fatalf("stream line %q does not start with `data: `", line)
	}
	blank, err := s.br.ReadString('\n')
	if err != nil || blank != "\n" {
		s.t.Fatalf("stream event %q is not followed by a blank line (got %q, %v)", line, blank, err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n")
}

// all reads every payload to the end.
func (s *sseReader) all() []string {
	s.t.Helper()
	var out []string
	for {
		p := s.next()
		if p == "" {
			return out
		}
		out = append(out, p)
	}
}

// stream posts a streaming request and returns its payloads.
func (e *env) stream(path string, body any) []string {
	e.t.Helper()
	resp := e.open(context.Background(), http.MethodPost, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	return newSSEReader(e.t, resp.Body).all()
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// apiErrorBody is an error response as a client reads it.
type apiErrorBody struct {
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// scriptExec is an Executor that plays a script: after any prompt, the
// logits favour script[0], script[1], … in turn, then fill (EOS by
// default), so outputs can hold </think>, tool calls and stop strings on
// purpose. It keeps the real scheduler, KV pool and streams. Delay slows
// every forward pass, so a request stays in flight as long as a test needs.
type scriptExec struct {
	script []int32
	fill   int32
	delay  time.Duration
	// panicOn, when set, makes a forward pass panic when it returns true
	// for the pass's sequences, as a model bug would.
	panicOn func([]model.Seq) bool
	// passes counts the forward passes begun, before their delay.
	passes atomic.Int64

	kv    *model.KVCache
	vocab int
	mu    sync.Mutex
	base  map[int32]int // a sequence's slot of position 0 → its prompt length
}

// newScript returns an executor that plays ids, then fill forever.
func newScript(ids []int32, fill int32) *scriptExec {
	return &scriptExec{script: ids, fill: fill, base: map[int32]int{}}
}

func (x *scriptExec) Pool() *model.KVCache { return x.kv }

func (x *scriptExec) Forward(seqs []model.Seq) *model.Output {
	x.passes.Add(1)
	if x.delay > 0 {
		time.Sleep(x.delay)
	}
	if x.panicOn != nil && x.panicOn(seqs) {
		panic("injected: position 16384 beyond max_position_embeddings")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var rows [][]float32
	first := make([]int, len(seqs))
	next := func(idx int) []float32 {
		row := make([]float32, x.vocab)
		tok := x.fill
		if idx >= 0 && idx < len(x.script) {
			tok = x.script[idx]
		}
		row[tok] = 10
		return row
	}
	for j, s := range seqs {
		first[j] = len(rows)
		key := s.Slots[0]
		end := s.Pos + len(s.Tokens)
		if s.Pos == 0 {
			delete(x.base, key)
		}
		if _, ok := x.base[key]; !ok && s.Logits != model.NoRows && len(s.Tokens) > 0 {
			x.base[key] = end
		}
		base := x.base[key]
		switch s.Logits {
		case model.LastRow:
			rows = append(rows, next(end-base))
		case model.AllRows:
			for p := s.Pos; p < end; p++ {
				rows = append(rows, next(p+1-base))
			}
		}
	}
	data := make([]float32, 0, len(rows)*x.vocab)
	for _, r := range rows {
		data = append(data, r...)
	}
	return &model.Output{
		Logits: kernels.NewMat(data, len(rows), x.vocab),
		Hidden: kernels.NewMat(make([]float32, len(rows)), len(rows), 1),
		First:  first,
	}
}

// ids builds a script from text (as byte tokens) and special ids.
func ids(parts ...any) []int32 {
	var out []int32
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			for _, b := range []byte(v) {
				out = append(out, int32(b))
			}
		case int32:
			out = append(out, v)
		}
	}
	return out
}

// chatBody is a small chat request.
func chatBody(content string, extra map[string]any) map[string]any {
	b := map[string]any{
		"model":    "glmbench-nano",
		"messages": []map[string]any{{"role": "user", "content": content}},
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}
