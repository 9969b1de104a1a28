package evals

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// Defaults of Config, as `glmbench eval` documents them.
const (
	DefaultConcurrency = 16
	DefaultWindow      = 2048
	DefaultGenTokens   = 2048
	// DefaultTokenizeBytes bounds the text one tokenization echo carries:
	// 8 KiB is about 2,000 tokens for a BPE tokenizer and 8,192 for a
	// byte-level one, within any context glmbench meets.
	DefaultTokenizeBytes = 8 << 10
	// DefaultReasoningTokens is Config.ReasoningTokens' default: room for
	// the reasoning a thinking model gives an MMLU question (a few hundred
	// to a couple of thousand tokens), and its answer.
	DefaultReasoningTokens = 4096
	// MaxReasoningTokens bounds Config.ReasoningTokens: no question is
	// worth more.
	MaxReasoningTokens = 32768
)

// Config says how evals talk to an endpoint and how big they are.
type Config struct {
	// Endpoint is the endpoint under test; its Model is the model sent.
	Endpoint *endpoints.Endpoint
	// Concurrency is the most requests in flight at once.
	Concurrency int
	// Window is ppl's context budget per request in tokens, as lm-eval's
	// max_length: at most Window−1 prompt tokens (one carried + Window−2
	// scored) and the one generated token. Below 3 it is taken as 3.
	Window int
	// GenTokens is how many tokens long-ppl generates per prompt.
	GenTokens int
	// Limit caps the items of an eval (documents, prompts, questions per
	// MMLU subject, TriviaQA questions); 0 takes each eval's default.
	Limit int
	// ConnectTimeout bounds a dial plus TLS handshake; RequestTimeout one
	// request (0: none).
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	// TokenizeBytes bounds the text of one tokenization echo.
	TokenizeBytes int
	// ReasoningTokens is the max_tokens of MMLU's greedy chat answer once
	// the model has shown it reasons before it answers (a thinking model):
	// room for its reasoning and then the answer.
	ReasoningTokens int
	// Extra is --extra-body: a JSON object whose fields every generation
	// request (to /completions and /chat/completions, not /tokenize)
	// carries besides the eval's own, from endpoints.ParseExtraBody with
	// EvalFields; nil for none. A hybrid reasoning model answers, rather
	// than thinks, with {"chat_template_kwargs": {"enable_thinking": false}}.
	Extra json.RawMessage
	// Progress, when not nil, is kept up to date for a display.
	Progress *Progress
}

// Runner runs evals against one endpoint. It probes echo once and finds
// how to tokenize once, for every eval it runs.
type Runner struct {
	cfg   Config
	model string
	pool  *endpoints.Pool
	// extra holds the transports of clients made outside the pool.
	extra []*endpoints.Transport
	// backoff replaces retryBackoff (tests).
	backoff time.Duration
	// extraBody is Config.Extra's fields (nil: none).
	extraBody map[string]json.RawMessage

	probeOnce sync.Once
	probe     *EchoProbe
	probeFail *schema.EvalFailure

	// thinks is set once a greedy chat answer (MMLU's chat-greedy,
	// TriviaQA's chat-generate: chatAnswer) came with reasoning: every later
	// one, of either eval, is asked with Config.ReasoningTokens at once.
	thinks atomic.Bool

	tokOnce sync.Once
	tok     *tokSource
	tokFail *schema.EvalFailure
}

// NewRunner returns a Runner for cfg, filling its zero fields with the defaults.
func NewRunner(cfg Config) *Runner {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	cfg.Window = max(cfg.Window, 3)
	if cfg.GenTokens <= 0 {
		cfg.GenTokens = DefaultGenTokens
	}
	if cfg.TokenizeBytes <= 0 {
		cfg.TokenizeBytes = DefaultTokenizeBytes
	}
	if cfg.ReasoningTokens <= 0 {
		cfg.ReasoningTokens = DefaultReasoningTokens
	}
	cfg.ReasoningTokens = min(cfg.ReasoningTokens, MaxReasoningTokens)
	r := &Runner{
		cfg: cfg, model: cfg.Endpoint.Model,
		pool: endpoints.NewPool(cfg.Endpoint, endpoints.TransportOptions{Conns: cfg.Concurrency, ConnectTimeout: cfg.ConnectTimeout}),
	}
	if len(cfg.Extra) > 0 && json.Unmarshal(cfg.Extra, &r.extraBody) != nil {
		panic("evals: Config.Extra is not a JSON object; endpoints.ParseExtraBody makes one")
	}
	return r
}

// Close closes the Runner's idle connections.
func (r *Runner) Close() {
	r.pool.Close()
	for _, t := range r.extra {
		t.Close()
	}
}

// sender returns the sender request i uses.
func (r *Runner) sender(i int) sender {
	return sender{c: r.pool.Client(i), timeout: r.cfg.RequestTimeout, backoff: r.backoff, extra: r.extraBody}
}

// rootSender returns a sender for routes beside the API base (vLLM's and
// SGLang's /tokenize live at the server root, not under /v1).
func (r *Runner) rootSender() sender {
	ep := r.cfg.Endpoint.At(strings.TrimSuffix(r.cfg.Endpoint.BaseURL, "/v1"))
	t := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: r.cfg.ConnectTimeout, Trust: ep.Trust})
	r.extra = append(r.extra, t)
	return sender{c: endpoints.NewClient(ep, t), timeout: r.cfg.RequestTimeout, backoff: r.backoff}
}

// Probe runs the echo probe once and returns its outcome every time after.
func (r *Runner) Probe(ctx context.Context) (*EchoProbe, *schema.EvalFailure) {
	p, f := r.probeRaw(ctx)
	return p, finishFailure(r.cfg.Endpoint, f)
}

// probeRaw is Probe with the failure as the evals hold it (newFailure).
func (r *Runner) probeRaw(ctx context.Context) (*EchoProbe, *schema.EvalFailure) {
	r.probeOnce.Do(func() {
		r.cfg.Progress.begin("echo probe", 1)
		r.probe, r.probeFail = probeEcho(ctx, r.sender(0), r.model)
		r.cfg.Progress.add(1)
	})
	return r.probe, r.probeFail
}

// limit returns the item cap: Config.Limit, else def (0: all).
func (r *Runner) limit(def int) int {
	if r.cfg.Limit > 0 {
		return r.cfg.Limit
	}
	return def
}

// forEach runs fn for i in [0, n), at most Concurrency at once. The first
// failure stops the rest; the one returned is the failure of the lowest
// index (those cut off by it are not failures), or Interrupted when ctx ended.
func (r *Runner) forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) *schema.EvalFailure) *schema.EvalFailure {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first = -1
		fail  *schema.EvalFailure
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range min(r.cfg.Concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx2.Err() != nil {
					return
				}
				f := fn(ctx2, i)
				r.cfg.Progress.add(1)
				if f == nil || (KindOf(f) == Interrupted && ctx.Err() == nil) {
					continue
				}
				mu.Lock()
				if first < 0 || i < first {
					first, fail = i, f
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return newFailure(Interrupted, 0, nil, nil, context.Cause(ctx).Error())
	}
	return fail
}

// Progress is what the eval in flight has done, for a display to read from
// another goroutine. A nil *Progress records nothing.
type Progress struct {
	mu    sync.Mutex
	stage string
	start time.Time
	// Total is the number of steps of the current stage; Done those done.
	Total, Done atomic.Int64
}

// Stage returns the current stage's name and when it began.
func (p *Progress) Stage() (string, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stage, p.start
}

func (p *Progress) begin(stage string, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stage, p.start = stage, time.Now()
	p.mu.Unlock()
	p.Done.Store(0)
	p.Total.Store(int64(total))
}

func (p *Progress) add(n int) {
	if p != nil {
		p.Done.Add(int64(n))
	}
}
