package sched

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
)

// Config holds the scheduler's settings, named as SGLang's server args.
type Config struct {
	// MaxRunningRequests caps requests in the running batch.
	MaxRunningRequests int `json:"max_running_requests"`
	// MaxQueuedRequests caps the waiting queue; 0 is unbounded. Beyond it a
	// request is refused with 503 "The request queue is full.".
	MaxQueuedRequests int `json:"max_queued_requests"`
	// ChunkedPrefillSize is the most prompt tokens of one request per prefill
	// batch (-1: no chunking).
	ChunkedPrefillSize int `json:"chunked_prefill_size"`
	// MaxPrefillTokens is the most new tokens in one prefill batch.
	MaxPrefillTokens int `json:"max_prefill_tokens"`
	// PageSize is tokens per KV page.
	PageSize int `json:"page_size"`
	// MaxTotalTokens is the KV pool's size in tokens.
	MaxTotalTokens int `json:"max_total_tokens"`
	// SchedulePolicy is fcfs or lpm (longest prefix match first).
	SchedulePolicy string `json:"schedule_policy"`
	// DisableRadixCache turns the prefix cache off.
	DisableRadixCache bool `json:"disable_radix_cache"`
	// StreamInterval is how many tokens a stream event carries at most.
	StreamInterval int `json:"stream_interval"`
	// ScheduleConservativeness scales the KV reserved for running requests' future tokens.
	ScheduleConservativeness float64 `json:"schedule_conservativeness"`
	// ContextLength is the longest sequence (prompt + output).
	ContextLength int `json:"context_length"`
	// EnableMixedChunk runs the running requests' decode tokens in the same
	// batch as a prefill (SGLang's --enable-mixed-chunk) instead of pausing
	// them while prefills keep coming.
	EnableMixedChunk bool `json:"enable_mixed_chunk"`
	// SpeculativeAlgorithm turns speculative decoding on: EAGLE (NEXTN is
	// SGLang's alias for it, read as EAGLE) drafts with the model's MTP
	// layer and verifies the draft in one forward pass; empty is off.
	SpeculativeAlgorithm string `json:"speculative_algorithm"`
	// SpeculativeNumSteps is how many tokens the drafter proposes per step
	// (default 3 when speculation is on).
	SpeculativeNumSteps int `json:"speculative_num_steps"`
	// SpeculativeEagleTopK is the draft tree's branching; only 1 (a chain)
	// is supported.
	SpeculativeEagleTopK int `json:"speculative_eagle_topk"`
	// SpeculativeNumDraftTokens is the tokens verified per step. With topk
	// 1 it is speculative_num_steps+1, and like SGLang the scheduler sets
	// it so whatever was asked (server_args.py adjusts it with a warning).
	SpeculativeNumDraftTokens int `json:"speculative_num_draft_tokens"`
}

// Speculative reports whether speculative decoding is on.
func (c *Config) Speculative() bool { return c.SpeculativeAlgorithm != "" }

// ServerArgs returns a pointer to each of c's fields by its SGLang
// server-arg name (its JSON tag): the one list of those names, for reading
// settings from an SGLang config and reporting them back.
func (c *Config) ServerArgs() map[string]any {
	v := reflect.ValueOf(c).Elem()
	args := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		args[name] = v.Field(i).Addr().Interface()
	}
	return args
}

// SGLang's constants for the admission budget (schedule_policy.py, environ.py).
const (
	clipMaxNewTokens     = 4096 // CLIP_MAX_NEW_TOKENS_ESTIMATION
	initNewTokenRatio    = 0.7  // SGLANG_INIT_NEW_TOKEN_RATIO
	minNewTokenFactor    = 0.14 // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
	newTokenRatioDecay   = 600  // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
	retractDecodeSteps   = 20   // SGLANG_RETRACT_DECODE_STEPS
	lpmFallbackQueueSize = 128  // lpm becomes fcfs beyond this many waiting
)

// Defaults fills unset fields with SGLang's defaults (chunked prefill 4096
// as when GPU memory is unknown, max prefill 16384, page size 1, fcfs,
// stream interval 1, conservativeness 1).
func (c *Config) Defaults() {
	c.ChunkedPrefillSize = cmp.Or(c.ChunkedPrefillSize, 4096)
	c.MaxPrefillTokens = cmp.Or(c.MaxPrefillTokens, 16384)
	c.PageSize = cmp.Or(c.PageSize, 1)
	c.SchedulePolicy = cmp.Or(c.SchedulePolicy, "fcfs")
	c.StreamInterval = cmp.Or(c.StreamInterval, 1)
	c.ScheduleConservativeness = cmp.Or(c.ScheduleConservativeness, 1)
	c.MaxRunningRequests = cmp.Or(c.MaxRunningRequests, min(2048, max(1, c.MaxTotalTokens/2)))
	if c.Speculative() {
		c.specDefaults()
	}
}

// specDefaults completes the speculative settings as SGLang's server args
// do for an MTP model with topk 1: NEXTN is EAGLE, 3 steps unless given,
// topk 1 unless given, draft tokens steps+1, and mixed chunks off (SGLang:
// "Mixed chunked prefill is disabled because of using eagle speculative
// decoding"), so that a verify batch never carries a prefill.
func (c *Config) specDefaults() {
	if strings.EqualFold(c.SpeculativeAlgorithm, "NEXTN") {
		c.SpeculativeAlgorithm = "EAGLE"
	}
	c.SpeculativeNumSteps = cmp.Or(c.SpeculativeNumSteps, 3)
	c.SpeculativeEagleTopK = cmp.Or(c.SpeculativeEagleTopK, 1)
	if c.SpeculativeEagleTopK == 1 {
		c.SpeculativeNumDraftTokens = c.SpeculativeNumSteps + 1
	}
	c.EnableMixedChunk = false
}

// maxSpecSteps bounds speculative_num_steps: every step drafts and
// verifies that many tokens per request.
const maxSpecSteps = 32

// MaxPoolTokens bounds max_total_tokens: 268 M tokens, about 28 times the
// largest pool the engine sizes by itself (9.5 M) and 4 times the simulated
// executor's default (64 M), so any pool a real user sets fits, while a
// typo such as 9e18 is refused in one line instead of panicking in the
// page table's allocation (page ids are int32) or running out of memory.
const MaxPoolTokens = 1 << 28

// Validate checks a config after Defaults.
func (c *Config) Validate() error {
	switch {
	case c.PageSize < 1:
		return fmt.Errorf("page_size must be at least 1")
	case c.ChunkedPrefillSize != -1 && (c.ChunkedPrefillSize < c.PageSize || c.ChunkedPrefillSize%c.PageSize != 0):
		return fmt.Errorf("chunked_prefill_size %d must be -1 or a positive multiple of page_size %d", c.ChunkedPrefillSize, c.PageSize)
	case c.MaxPrefillTokens < 1:
		return fmt.Errorf("max_prefill_tokens must be positive")
	case c.MaxTotalTokens < c.PageSize:
		return fmt.Errorf("max_total_tokens %d holds no page of %d", c.MaxTotalTokens, c.PageSize)
	case c.MaxTotalTokens > MaxPoolTokens:
		return fmt.Errorf("max_total_tokens %d: want at most %d (268 M tokens)", c.MaxTotalTokens, MaxPoolTokens)
	case c.SchedulePolicy != "fcfs" && c.SchedulePolicy != "lpm":
		return fmt.Errorf("schedule_policy %q: want fcfs or lpm", c.SchedulePolicy)
	case c.MaxRunningRequests < 1 || c.MaxQueuedRequests < 0 || c.StreamInterval < 1:
		return fmt.Errorf("max_running_requests, max_queued_requests and stream_interval must be positive")
	case !(c.ScheduleConservativeness > 0) || math.IsInf(c.ScheduleConservativeness, 1):
		// NaN fails every comparison: the negated test refuses it.
		return fmt.Errorf("schedule_conservativeness must be a positive number, not %v", c.ScheduleConservativeness)
	}
	return c.validateSpec()
}

// CheckSpeculative reports what is wrong with c's speculative settings
// once their defaults are filled, c itself unchanged, for a command to
// refuse them before it starts anything; note is SGLang's warning when
// speculative_num_draft_tokens was given and will be adjusted.
func (c Config) CheckSpeculative() (note string, err error) {
	if !c.Speculative() {
		return "", nil
	}
	asked := c.SpeculativeNumDraftTokens
	c.specDefaults()
	if err := c.validateSpec(); err != nil {
		return "", err
	}
	if asked != 0 && asked != c.SpeculativeNumDraftTokens {
		// server_args.py's words.
		note = fmt.Sprintf("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1 (%d, not %d)", c.SpeculativeNumDraftTokens, asked)
	}
	return note, nil
}

// validateSpec checks the speculative settings after specDefaults.
func (c *Config) validateSpec() error {
	if c.Speculative() {
		switch {
		case c.SpeculativeAlgorithm != "EAGLE":
			return fmt.Errorf("speculative_algorithm %q: want EAGLE or NEXTN (the model's MTP layer drafts)", c.SpeculativeAlgorithm)
		case c.SpeculativeNumSteps < 1 || c.SpeculativeNumSteps > maxSpecSteps:
			return fmt.Errorf("speculative_num_steps %d: want 1 to %d", c.SpeculativeNumSteps, maxSpecSteps)
		case c.SpeculativeEagleTopK != 1:
			return fmt.Errorf("speculative_eagle_topk %d: only 1 is supported (a chain of drafts, no tree)", c.SpeculativeEagleTopK)
		}
	}
	return nil
}

// Executor runs batches: the model, or a simulation of its timing.
type Executor interface {
	Forward(seqs []model.Seq) *model.Output
	Pool() *model.KVCache
}

// SpecExecutor is an Executor with a drafter, for speculative decoding:
// the model with its MTP layer, or the simulated executor. The scheduler
// calls Draft right before the verify Forward of the same sequences (and,
// with K 0, after each prefill chunk to fill the draft cache).
type SpecExecutor interface {
	Executor
	// Draft brings the drafter's cache up to each sequence's committed
	// tokens and returns up to K proposed tokens after its last one.
	Draft(seqs []model.DraftSeq) [][]int32
}

// An Executor that is an idler hears when the scheduler runs out of work
// and waits for more, so that its next Forward is not back to back with
// the last (the simulated executor's pacing, engine/sim).
type idler interface{ Idle() }

// Observer hears the scheduler's timings (for Prometheus); nil hears nothing.
type Observer interface {
	FirstToken(ttft time.Duration)
	InterToken(gap time.Duration)
	Tokens(prompt, generated int)
	// Verified records one speculative verify step of one request: of
	// drafted draft tokens, accepted were accepted, so the step emitted
	// accepted+1 tokens (SGLang's accept length).
	Verified(drafted, accepted int)
}

// Stats is a snapshot of the scheduler's state.
type Stats struct {
	Waiting, Running int
	KVUsedTokens     int
	KVTotalTokens    int
	CachedTokens     int // tokens held by the prefix cache
	Retractions      int64
	NewTokenRatio    float64
	// PrefixQueried and PrefixHit count prompt tokens looked up in the
	// prefix cache at admission and found there (SGLang's cache hit rate
	// is their ratio).
	PrefixQueried, PrefixHit int64
	// SpecSteps counts speculative verify steps, one per request per step;
	// SpecDrafted and SpecAccepted their draft tokens and accepted ones.
	// The mean accept length is 1 + SpecAccepted/SpecSteps.
	SpecSteps, SpecDrafted, SpecAccepted int64
}

// AcceptLength is the mean tokens a speculative verify step emitted per
// request, 1 + accepted/steps (SGLang's spec_accept_length); 0 with no step.
func (st Stats) AcceptLength() float64 {
	if st.SpecSteps == 0 {
		return 0
	}
	return 1 + float64(st.SpecAccepted)/float64(st.SpecSteps)
}

// TokenUsage is the fraction of the KV pool in use (SGLang's token_usage).
func (st Stats) TokenUsage() float64 {
	if st.KVTotalTokens == 0 {
		return 0
	}
	return float64(st.KVUsedTokens) / float64(st.KVTotalTokens)
}

// req is the scheduler's state of one request.
type req struct {
	r       *Request
	stream  *Stream
	arrival time.Time
	last    time.Time // when the last token was emitted

	// all is the prompt followed by the output so far; out is its tail
	// all[len(prompt):], the generated tokens. One slice, grown by emit, so
	// that no step copies the prompt again (rebuilding it every step cost
	// more than the model's own work at long contexts).
	all    []int32
	out    []int32
	slots  []int32 // KV slots of the positions so far, see slotsTo
	pages  []int32 // KV pages: the shared prefix's first, then its own
	shared int     // leading pages owned by the radix cache
	node   *radixNode
	cached int // prompt tokens served by the prefix cache at the first admission
	filled int // positions whose KV is computed
	// target is how many positions prefill must fill: the prompt, plus the
	// output so far for a request retracted and re-admitted.
	target int

	sampler *sampler.Sampler
	stops   map[int32]bool

	// drafted is the first position whose drafter cache is not yet that of
	// the committed context; hid holds the main model's hidden states of
	// positions drafted−1 … filled−1, one row each, that the next Draft
	// reads (nil: one zero row, before position 0 or after a prefix hit,
	// whose hidden state is not kept).
	drafted int
	hid     [][]float32

	pending   []int32 // tokens not yet streamed (stream interval)
	pendingLP []TokenLogprob
	promptLP  []*TokenLogprob
	retracted bool
}

// newReq returns the scheduler's state of r, its token list holding the
// prompt with room for some output.
func newReq(r *Request) *req {
	n := len(r.Prompt)
	all := append(make([]int32, 0, n+min(r.Params.MaxNewTokens, clipMaxNewTokens)), r.Prompt...)
	return &req{r: r, stream: newStream(), arrival: time.Now(), target: n, all: all, out: all[n:], stops: map[int32]bool{}}
}

// tokens is the prompt followed by the output so far.
func (q *req) tokens() []int32 { return q.all }

// appendOut appends a generated token.
func (q *req) appendOut(tok int32) {
	q.all = append(q.all, tok)
	q.out = q.all[len(q.r.Prompt):]
}

// slotsTo returns the KV slots of positions [0, n), extending the cached
// list from the request's pages.
func (q *req) slotsTo(kv *model.KVCache, n int) []int32 {
	if len(q.slots) < n {
		q.slots = kv.SlotsFor(q.slots, q.pages, len(q.slots), n)
	}
	return q.slots[:n]
}

// Scheduler runs requests on an executor.
type Scheduler struct {
	cfg   Config
	exec  Executor
	spec  SpecExecutor // exec, when speculative decoding is on; else nil
	kv    *model.KVCache
	radix *RadixCache
	obs   Observer
	eos   []int32
	vocab int // ids at and above it are padding: never sampled

	mu       sync.Mutex // guards inbox and closing
	inbox    []*req
	wake     chan struct{}
	closing  bool
	shutdown chan struct{}
	done     chan struct{}

	waiting  []*req
	running  []*req
	chunked  *req
	ratio    float64
	retracts atomic.Int64
	// prefixQueried and prefixHit count prompt tokens looked up in the
	// prefix cache at first admission and found there; specSteps,
	// specDrafted and specAccepted the speculative verify steps. The
	// scheduler's goroutine alone writes them; publish copies them to Stats.
	prefixQueried, prefixHit             int64
	specSteps, specDrafted, specAccepted int64
	stats                                atomic.Pointer[Stats]
	rng                                  *mrand.Rand
	logp                                 []float32

	// inStep is the batch of the step running now, for failStep.
	inStep []*req
	// between is the request the step is moving from one list to another
	// (matching or admitting it, extending its chunked prefill, retracting
	// it): out of its batch, and perhaps out of every list, so failStep
	// fails it by name. See move.
	between *req
	// moveHook, set by tests only, hears each such move as it begins; a
	// panic from it stands for one from the code that moves the request.
	moveHook   func(stage string, r *Request)
	stepPanics atomic.Int64
	log        atomic.Pointer[slog.Logger]
}

// New returns a scheduler over exec; eos lists the stop tokens every request
// has unless it ignores EOS; ids from vocab on are padding of the model's
// vocabulary and are never sampled (0: none).
func New(cfg Config, exec Executor, eos []int32, vocab int, obs Observer) (*Scheduler, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv := exec.Pool()
	if kv.PageSize != cfg.PageSize {
		return nil, fmt.Errorf("KV cache pages of %d tokens, page_size %d", kv.PageSize, cfg.PageSize)
	}
	var spec SpecExecutor
	if cfg.Speculative() {
		var ok bool
		if spec, ok = exec.(SpecExecutor); !ok {
			return nil, fmt.Errorf("speculative_algorithm %s: the executor has no drafter", cfg.SpeculativeAlgorithm)
		}
		if d, ok := exec.(interface{ HasDrafter() bool }); ok && !d.HasDrafter() {
			return nil, fmt.Errorf("speculative_algorithm %s: the model has no MTP layer to draft with", cfg.SpeculativeAlgorithm)
		}
	}
	s := &Scheduler{
		cfg: cfg, exec: exec, spec: spec, kv: kv, obs: obs, eos: eos, vocab: vocab,
		wake: make(chan struct{}, 1), shutdown: make(chan struct{}), done: make(chan struct{}),
		rng: mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 1)),
	}
	s.ratio = s.initRatio()
	if !cfg.DisableRadixCache {
		s.radix = NewRadixCache(cfg.PageSize)
	}
	s.publish()
	return s, nil
}

// Config returns the effective settings.
func (s *Scheduler) Config() Config { return s.cfg }

func (s *Scheduler) initRatio() float64 {
	return min(initNewTokenRatio*s.cfg.ScheduleConservativeness, 1)
}

// Stats returns the latest snapshot.
func (s *Scheduler) Stats() Stats { return *s.stats.Load() }

// Submit queues a request and returns its stream. It refuses a request that
// can never fit (prompt and output beyond the context, or beyond the KV
// pool) and, once Shutdown began, every request. Every bound is checked by
// subtraction, so no max_tokens (up to math.MaxInt) can overflow it.
func (s *Scheduler) Submit(r *Request) (*Stream, error) {
	if err := s.check(r); err != nil {
		return nil, err
	}
	q := newReq(r)
	for _, t := range r.Params.StopTokens {
		q.stops[t] = true
	}
	if !r.Params.IgnoreEOS {
		for _, t := range s.eos {
			q.stops[t] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, ErrShuttingDown
	}
	seed := r.Params.Seed
	if !r.Params.HasSeed {
		seed = s.rng.Uint64()
	}
	// The request is whole before the scheduler's goroutine can see it.
	q.sampler = sampler.New(r.Params.Sampling, seed)
	s.inbox = append(s.inbox, q)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return q.stream, nil
}

// check refuses a request that can never run. The wording of the context
// errors is vLLM's (vllm/entrypoints/openai/serving_engine.py,
// _validate_input, as its servers answer since 0.6: "'max_tokens' or
// 'max_completion_tokens' is too large: 8000. This model's maximum context
// length is 4096 tokens and your request has 2778 input tokens (8000 > 4096
// - 2778)."), and for min_tokens vLLM's SamplingParams checks.
func (s *Scheduler) check(r *Request) error {
	n, p := len(r.Prompt), r.Params
	ctx := s.cfg.ContextLength
	bad := func(format string, args ...any) error {
		return &RequestError{Status: 400, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case n == 0:
		return bad("the prompt is empty")
	case p.MaxNewTokens < 0:
		return bad("max_tokens must be at least 0, got %d.", p.MaxNewTokens)
	case p.MinNewTokens < 0:
		return bad("min_tokens must be greater than or equal to 0, got %d.", p.MinNewTokens)
	case p.MinNewTokens > p.MaxNewTokens:
		return bad("min_tokens must be less than or equal to max_tokens=%d, got %d.", p.MaxNewTokens, p.MinNewTokens)
	case n > ctx || (n == ctx && p.MaxNewTokens > 0):
		return PromptTooLong(ctx, n)
	case p.MaxNewTokens > ctx-n:
		return bad("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			p.MaxNewTokens, ctx, n, p.MaxNewTokens, ctx, n)
	case p.MaxNewTokens > s.cfg.MaxTotalTokens-s.cfg.PageSize-n:
		// n + MaxNewTokens ≤ ctx here, so the sum cannot overflow.
		return bad("the request needs %d tokens of KV cache; the pool holds %d", n+p.MaxNewTokens, s.cfg.MaxTotalTokens)
	}
	return nil
}

// PromptTooLong refuses a prompt of n tokens that leaves no room in a
// context of ctx tokens, as vLLM words it (see check).
func PromptTooLong(ctx, n int) *RequestError {
	return &RequestError{Status: 400, Message: fmt.Sprintf(
		"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", ctx, n)}
}

// RequestError is a request the scheduler refuses, with its HTTP status.
type RequestError struct {
	Status  int
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// Run is the scheduler's loop; it returns after Shutdown has drained it.
func (s *Scheduler) Run() {
	defer close(s.done)
	for {
		s.takeInbox()
		s.recovered(func() bool { s.dropAborted(); return false })
		if s.stopping() {
			s.abortAll(ErrShuttingDown)
			return
		}
		if s.step() {
			s.publish()
			continue
		}
		s.publish()
		s.ratio = s.initRatio() // idle: SGLang resets the ratio
		if i, ok := s.exec.(idler); ok {
			i.Idle()
		}
		select {
		case <-s.wake:
		case <-s.shutdown:
		}
	}
}

// step runs one prefill or decode step. A panic in it (a bug, or an
// executor that failed) ends the requests of the step's batch with a 500
// and is logged; the loop goes on serving the others, as an HTTP server
// survives a handler's panic.
func (s *Scheduler) step() bool {
	return s.recovered(func() bool { return s.prefillStep() || s.decodeStep() })
}

// recovered runs f, a piece of the loop's work on its lists; a panic in it
// fails the requests it was working on (see failStep) and counts as work.
func (s *Scheduler) recovered(f func() bool) (worked bool) {
	s.inStep, s.between = s.inStep[:0], nil
	defer func() {
		if v := recover(); v != nil {
			s.failStep(v, debug.Stack())
			worked = true
		}
	}()
	return f()
}

// failStep ends the requests a panicking step was running: its batch and
// the request it was moving between lists (being admitted, extended or
// retracted), or, when it panicked with neither, every running request
// (making room for them is what failed), or else the head of the queue.
// So every recovered panic fails at least one request while any is left,
// and a request that panics each time it is touched cannot keep the loop
// panicking without serving. Their KV is given back; a release that panics
// too leaks its pages rather than the process.
func (s *Scheduler) failStep(v any, stack []byte) {
	affected := slices.Clone(s.inStep)
	if s.between != nil {
		affected = append(affected, s.between)
	}
	if len(affected) == 0 {
		affected = slices.Clone(s.running)
		if s.chunked != nil {
			affected = append(affected, s.chunked)
		}
	}
	if len(affected) == 0 && len(s.waiting) > 0 {
		affected = []*req{s.waiting[0]}
	}
	s.between = nil
	// Each request once, in affected's order, not a map's: which pages go
	// back first decides later requests' slots, and runs must repeat.
	hit := make(map[*req]bool, len(affected))
	affected = slices.DeleteFunc(affected, func(q *req) bool {
		dup := hit[q]
		hit[q] = true
		return dup
	})
	s.remove(hit)
	// Counted and logged before the requests hear of it: whoever sees one
	// end with this 500 finds the panic in the log and the count.
	s.stepPanics.Add(1)
	s.logger().Error("scheduler step panicked; its requests failed with 500, serving goes on",
		"panic", fmt.Sprint(v), "failed_requests", len(hit), "stack", string(stack))
	err := &RequestError{Status: 500, Message: fmt.Sprintf("Internal server error: the scheduler step failed (%v).", v)}
	for _, q := range affected {
		func() {
			defer func() {
				if rv := recover(); rv != nil {
					q.pages, q.shared, q.node = nil, 0, nil
				}
			}()
			s.release(q, false)
		}()
		q.stream.push(Event{Finish: &Finish{Reason: "abort", Matched: -1, Err: err}, PromptTokens: len(q.r.Prompt), CompletionTokens: len(q.out)})
	}
}

// move marks q as the request the step is moving between its lists, so
// that a panic before the move ends fails it; stage names the move for
// tests ("admit", "chunk", "retract", "drop"). The caller clears s.between
// once q is in a list (or the batch) again.
func (s *Scheduler) move(q *req, stage string) {
	s.between = q
	if s.moveHook != nil {
		s.moveHook(stage, q.r)
	}
}

// SetLogger sets the logger that hears a panicking step; nil discards.
func (s *Scheduler) SetLogger(l *slog.Logger) { s.log.Store(l) }

func (s *Scheduler) logger() *slog.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// StepPanics counts the steps that panicked and were recovered.
func (s *Scheduler) StepPanics() int64 { return s.stepPanics.Load() }

// Shutdown stops accepting requests, ends the running ones with an abort
// finish, and waits for the loop to return (or ctx to end).
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		close(s.shutdown)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Scheduler) stopping() bool { return isClosed(s.shutdown) }

// isClosed reports, without waiting, whether ch (a channel that is only
// ever closed) is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// takeInbox moves submitted requests to the waiting queue, refusing those
// beyond max_queued_requests as SGLang does: "len(waiting_queue) + 1 <=
// max_queued_requests", running requests not counted.
func (s *Scheduler) takeInbox() {
	s.mu.Lock()
	in := s.inbox
	s.inbox = nil
	s.mu.Unlock()
	for _, q := range in {
		if s.cfg.MaxQueuedRequests > 0 && len(s.waiting)+1 > s.cfg.MaxQueuedRequests {
			s.abort(q, ErrQueueFull)
			continue
		}
		s.waiting = append(s.waiting, q)
	}
}

// dropAborted removes requests whose client went away, freeing their KV.
// Each is ended while still in its list, so that a panic freeing it fails
// it alone (see move); one ended before such a panic is ended again, to no
// effect, the next time round. Only those it ended leave their lists: a
// client may abort in between.
func (s *Scheduler) dropAborted() {
	var gone map[*req]bool
	for _, list := range [][]*req{s.waiting, s.running, {s.chunked}} {
		for _, q := range list {
			if q != nil && q.stream.isAborted() {
				s.move(q, "drop")
				s.abort(q, nil)
				if gone == nil {
					gone = make(map[*req]bool)
				}
				gone[q] = true
			}
		}
	}
	s.between = nil
	if len(gone) > 0 {
		s.remove(gone)
	}
}

// remove takes the requests in gone out of the waiting and running lists
// and out of s.chunked.
func (s *Scheduler) remove(gone map[*req]bool) {
	drop := func(q *req) bool { return gone[q] }
	s.waiting = slices.DeleteFunc(s.waiting, drop)
	s.running = slices.DeleteFunc(s.running, drop)
	if gone[s.chunked] {
		s.chunked = nil
	}
}

// abortAll ends every request, queued, running or still in the inbox, with err.
func (s *Scheduler) abortAll(err error) {
	for _, list := range [][]*req{s.waiting, s.running} {
		for _, q := range list {
			s.abort(q, err)
		}
	}
	if s.chunked != nil {
		s.abort(s.chunked, err)
	}
	s.waiting, s.running, s.chunked = nil, nil, nil
	s.takeInbox()
	for _, q := range s.waiting {
		s.abort(q, err)
	}
	s.waiting = nil
}

// abort frees a request's KV and ends its stream with an abort finish:
// err is the scheduler's reason, nil when the client asked for it.
func (s *Scheduler) abort(q *req, err error) {
	s.release(q, false)
	q.stream.push(Event{Finish: &Finish{Reason: "abort", Matched: -1, Err: err}, PromptTokens: len(q.r.Prompt), CompletionTokens: len(q.out)})
}

// release gives back a request's pages: its prefix lock, and either its own
// pages to the pool or, when insert is set (it finished), its KV to the
// prefix cache keyed by its tokens.
func (s *Scheduler) release(q *req, insert bool) {
	ps := s.cfg.PageSize
	own := q.pages[q.shared:]
	if insert && s.radix != nil {
		toks := q.tokens()[:q.filled]
		full := len(toks) / ps
		dup := s.radix.Insert(toks[:full*ps], q.pages[:full])
		s.kv.Release(dup)
		own = q.pages[max(full, q.shared):]
	}
	if q.node != nil {
		s.radix.Unlock(q.node)
		q.node = nil
	}
	s.kv.Release(own)
	q.pages, q.shared, q.filled, q.slots = nil, 0, 0, q.slots[:0]
	q.drafted, q.hid = 0, nil
}

// alloc takes n pages, evicting from the prefix cache if it must.
func (s *Scheduler) alloc(n int) ([]int32, bool) {
	s.evictFor(n)
	return s.kv.Alloc(n)
}

// evictFor evicts from the prefix cache until n pages are free, or as
// many as it can.
func (s *Scheduler) evictFor(n int) {
	if n > s.kv.FreePages() && s.radix != nil {
		s.kv.Release(s.radix.Evict(n - s.kv.FreePages()))
	}
}

func (s *Scheduler) freeTokens() int {
	n := s.kv.FreePages()
	if s.radix != nil {
		n += s.radix.Evictable()
	}
	return n * s.cfg.PageSize
}

// reserved is the KV the running requests will still need, as SGLang
// estimates it: Σ min(max_new − generated, 4096) × new_token_ratio.
func (s *Scheduler) reserved() float64 {
	var r float64
	for _, q := range s.running {
		r += float64(min(q.r.Params.MaxNewTokens-len(q.out), clipMaxNewTokens)) * s.ratio
	}
	return r
}

// order sorts the waiting queue by the policy: fcfs keeps arrival order;
// lpm puts the longest cached prefix first (fcfs beyond 128 waiting, or
// without a prefix cache, as SGLang falls back).
func (s *Scheduler) order() {
	if s.cfg.SchedulePolicy != "lpm" || s.radix == nil || len(s.waiting) > lpmFallbackQueueSize {
		return
	}
	match := make(map[*req]int, len(s.waiting))
	for _, q := range s.waiting {
		s.move(q, "admit")
		_, n, _ := s.radix.Match(q.tokens()[:q.target])
		match[q] = n
	}
	s.between = nil
	sort.SliceStable(s.waiting, func(i, j int) bool { return match[s.waiting[i]] > match[s.waiting[j]] })
}

// prefillAdder forms one prefill batch against the step's budgets, as
// SGLang's PrefillAdder does (schedule_policy.py): the request being
// prefilled in chunks first (add_chunked_req), then waiting requests one at
// a time (add_one_req) until a budget runs out.
type prefillAdder struct {
	s        *Scheduler
	remTotal float64 // KV tokens left, less the running requests' reservation
	remInput int     // new tokens left in the batch (max_prefill_tokens)
	remChunk int     // prompt tokens left for this step's chunks (chunked_prefill_size)
	slots    int     // places left in the running batch (max_running_requests)
	admitted int     // waiting requests admitted, from the head of the queue
	batch    []*req
	sizes    []int // tokens each request of batch extends by
}

// newPrefillAdder starts a batch with the budgets left now, after the
// running requests took their pages.
func (s *Scheduler) newPrefillAdder() *prefillAdder {
	remChunk := s.cfg.ChunkedPrefillSize
	if remChunk < 0 {
		remChunk = math.MaxInt
	}
	return &prefillAdder{
		s:        s,
		remTotal: float64(s.freeTokens()) - s.reserved(),
		remInput: s.cfg.MaxPrefillTokens,
		remChunk: remChunk,
		slots:    s.cfg.MaxRunningRequests - len(s.running),
	}
}

// full reports whether no further waiting request can join the batch: no
// place, no input or chunk budget left, or a request still being chunked
// (only one is chunked at a time).
func (a *prefillAdder) full() bool {
	return a.slots <= 0 || a.remInput <= 0 || a.remChunk <= 0 || a.s.chunked != nil
}

// add puts extend more tokens of q in the batch, taking the KV pages they
// need; it reports false, changing nothing, when the pool has none left.
func (a *prefillAdder) add(q *req, extend int) bool {
	s := a.s
	ps := s.cfg.PageSize
	need := (q.filled + extend + ps - 1) / ps
	if need > len(q.pages) {
		more, ok := s.alloc(need - len(q.pages))
		if !ok {
			return false
		}
		q.pages = append(q.pages, more...)
	}
	a.batch = append(a.batch, q)
	s.inStep = append(s.inStep, q)
	a.sizes = append(a.sizes, extend)
	a.remInput -= extend
	a.remChunk -= extend
	return true
}

// addChunked adds the next chunk of the request being prefilled in chunks
// (SGLang's add_chunked_req): as much of the rest as the chunk budget
// holds, whole pages unless it is the last chunk. The request stays
// s.chunked while chunks remain after this one, or when it could not be
// added at all.
func (a *prefillAdder) addChunked() {
	s := a.s
	q := s.chunked
	s.move(q, "chunk")
	ps := s.cfg.PageSize
	extend := min(q.target-q.filled, a.remChunk)
	if extend < q.target-q.filled {
		extend = extend / ps * ps
	}
	if extend > 0 && a.add(q, extend) {
		s.chunked = nil
		if q.filled+extend < q.target {
			s.chunked = q
		}
		a.slots--
	}
	s.between = nil
}

// addOne admits the waiting request q to the batch (SGLang's add_one_req),
// reusing its cached prefix, and reports false when it does not fit: the
// batch is then full, and q keeps no matched prefix. A request whose prompt
// does not fit in the chunk budget is added in part and becomes s.chunked.
// q is the request between lists (see move) until the caller clears it.
func (a *prefillAdder) addOne(q *req) bool {
	s := a.s
	s.move(q, "admit")
	s.matchPrefix(q)
	extend, need, ok := a.budget(q)
	if !ok || !a.add(q, extend) {
		s.unshare(q)
		return false
	}
	a.remTotal -= need
	a.admitted++
	a.slots--
	if q.filled+extend < q.target {
		s.chunked = q
	}
	return true
}

// budget returns how many tokens of q's prompt this batch can take (all
// that is left, or a chunk of whole pages) and the KV they and q's future
// tokens need; ok is false when q does not fit. The first waiting request
// admitted is taken beyond max_prefill_tokens, and, with nothing running,
// whatever the KV estimate, so that an idle scheduler always makes progress.
func (a *prefillAdder) budget(q *req) (extend int, need float64, ok bool) {
	ps := a.s.cfg.PageSize
	extend = q.target - q.filled
	need = float64(extend + min(q.r.Params.MaxNewTokens-len(q.out), clipMaxNewTokens))
	if need > a.remTotal && (len(a.s.running) > 0 || a.admitted > 0) {
		return 0, 0, false // not enough KV for it and its future tokens
	}
	if extend > a.remChunk {
		extend = a.remChunk / ps * ps
		if extend == 0 {
			return 0, 0, false
		}
	}
	if extend > a.remInput && a.admitted > 0 {
		return 0, 0, false
	}
	return extend, need, true
}

// matchPrefix gives a request that holds no pages the longest prefix of its
// tokens that the prefix cache holds, locked there; at least the last token
// is left to compute, for its logits. A request that wants prompt logprobs
// computes its whole prompt.
func (s *Scheduler) matchPrefix(q *req) {
	if q.pages != nil {
		return
	}
	if !q.retracted {
		s.prefixQueried += int64(len(q.r.Prompt))
	}
	if s.radix == nil || q.r.Params.PromptLogprobs {
		return
	}
	pages, n, node := s.radix.Match(q.tokens()[:q.target-1])
	if n > 0 {
		q.pages, q.shared, q.node, q.filled, q.slots = slices.Clone(pages), len(pages), node, n, q.slots[:0]
		// The drafter's cache rows of a cached prefix are those its last
		// owner left, and the hidden state at its end is not kept: both
		// only make drafts worse, never the output different.
		q.drafted, q.hid = n, nil
		s.radix.Lock(node)
		if !q.retracted {
			q.cached = n
			s.prefixHit += int64(n)
		}
	}
}

// prefillStep forms and runs a prefill batch if it can (SGLang runs prefill
// first when possible), as SGLang's get_new_batch_prefill: the chunked
// request first, then waiting requests in the policy's order.
func (s *Scheduler) prefillStep() bool {
	if len(s.waiting) == 0 && s.chunked == nil {
		return false
	}
	// With mixed chunks the running requests decode in this batch too; their
	// pages come first, so that admission sees what is left.
	var decoding []*req
	if s.cfg.EnableMixedChunk && len(s.running) > 0 {
		s.makeRoom()
		decoding = slices.Clone(s.running)
	}
	a := s.newPrefillAdder()
	if s.chunked != nil {
		a.addChunked()
	}
	s.order()
	for _, q := range s.waiting {
		if a.full() || !a.addOne(q) {
			break
		}
	}
	s.between = nil
	s.waiting = s.waiting[a.admitted:]
	if len(a.batch) == 0 {
		return false // with mixed chunks, the decode step will run them
	}
	s.runPrefill(a.batch, a.sizes, decoding)
	return true
}

// runPrefill runs a prefill batch whose requests extend by sizes, the
// decoding requests' tokens after theirs, and takes the results of both.
func (s *Scheduler) runPrefill(batch []*req, sizes []int, decoding []*req) {
	seqs := s.prefillSeqs(batch, sizes)
	s.inStep = append(s.inStep, decoding...)
	out := s.exec.Forward(append(seqs, s.decodeSeqs(decoding)...))
	s.decoded(decoding, out, len(batch))
	s.prefilled(batch, sizes, seqs, out)
	if s.spec != nil {
		s.fillDrafter(batch, seqs, out)
	}
}

// prefillSeqs is each request's next sizes[i] tokens from its first
// uncomputed position, with logits for its last row once its prompt is
// whole, or for every row when it wants prompt logprobs.
func (s *Scheduler) prefillSeqs(batch []*req, sizes []int) []model.Seq {
	var seqs []model.Seq
	for i, q := range batch {
		rows := model.NoRows
		if q.filled+sizes[i] == q.target {
			rows = model.LastRow
		}
		if q.r.Params.PromptLogprobs || s.spec != nil {
			rows = model.AllRows // speculation: every row's hidden state, for the drafter
		}
		toks := q.tokens()
		seqs = append(seqs, model.Seq{
			Tokens: toks[q.filled : q.filled+sizes[i]],
			Pos:    q.filled,
			Slots:  q.slotsTo(s.kv, q.filled+sizes[i]),
			Logits: rows,
		})
	}
	return seqs
}

// prefilled takes a prefill batch's results, sequence i of out being
// seqs[i]: each chunk's prompt logprobs, and for a request whose prompt is
// now whole, its first token (it joins the running batch) or, with
// max_tokens 0, its finish.
func (s *Scheduler) prefilled(batch []*req, sizes []int, seqs []model.Seq, out *model.Output) {
	for i, q := range batch {
		logits, _ := out.SeqRows(i)
		q.filled += sizes[i]
		if q.r.Params.PromptLogprobs {
			s.promptLogprobs(q, seqs[i], logits)
		}
		if q.filled < q.target {
			continue // more chunks to come
		}
		if q.r.Params.MaxNewTokens == 0 {
			s.finish(q, &Finish{Reason: "length", Matched: -1})
			continue
		}
		q.retracted = false
		s.running = append(s.running, q)
		s.emit(q, logits.Row(logits.Rows-1))
	}
}

// unshare drops the prefix a request matched but was not admitted with.
func (s *Scheduler) unshare(q *req) {
	if q.node != nil && q.filled == len(q.pages)*s.cfg.PageSize && len(q.pages) == q.shared {
		s.radix.Unlock(q.node)
		q.pages, q.shared, q.node, q.filled, q.slots = nil, 0, nil, 0, q.slots[:0]
		q.drafted, q.hid = 0, nil
	}
}

// promptLogprobs records the logprob of each prompt token that a row of
// this chunk predicts: row i gives the token at Pos+i+1.
func (s *Scheduler) promptLogprobs(q *req, seq model.Seq, logits interface {
	Row(int) []float32
}) {
	if q.promptLP == nil {
		q.promptLP = make([]*TokenLogprob, len(q.r.Prompt))
	}
	for i := range seq.Tokens {
		p := seq.Pos + i + 1
		if p >= len(q.r.Prompt) {
			break
		}
		lp := s.logprobs(logits.Row(i), q.r.Prompt[p], q.r.Params.PromptTopLogprobs)
		q.promptLP[p] = &lp
	}
}

// logprobs computes a token's log probability and the top alternatives.
func (s *Scheduler) logprobs(row []float32, id int32, top int) TokenLogprob {
	if cap(s.logp) < len(row) {
		s.logp = make([]float32, len(row))
	}
	lp := s.logp[:len(row)]
	s.maskPadding(row)
	sampler.LogSoftmax(lp, row)
	out := TokenLogprob{ID: id, Logprob: lp[id]}
	if top > 0 {
		ids, vals := sampler.TopLogprobs(lp, top)
		for i := range ids {
			out.Top = append(out.Top, TopLogprob{ID: ids[i], Logprob: vals[i]})
		}
	}
	return out
}

// maskPadding sets the logits of padding ids to −Inf: they decode to
// nothing, and a random-weight model would otherwise pick them.
func (s *Scheduler) maskPadding(row []float32) {
	if s.vocab > 0 && s.vocab < len(row) {
		for i := range row[s.vocab:] {
			row[s.vocab+i] = float32(math.Inf(-1))
		}
	}
}

// emit samples a running request's next token from its logits row, streams
// it and retires the request if it is done.
func (s *Scheduler) emit(q *req, row []float32) {
	s.maskPadding(row)
	tok := q.sampler.Sample(row)
	s.observeTokens(q, 1)
	s.take(q, tok, row)
}

// observeTokens tells the observer that n tokens of q come now: the first
// one's TTFT, or the gap since q's last tokens spread evenly over the n, as
// SGLang's observe_inter_token_latency (interval / num_new_tokens, observed
// num_new_tokens times) does for a speculative step's run.
func (s *Scheduler) observeTokens(q *req, n int) {
	now := time.Now()
	if s.obs != nil {
		if len(q.out) == 0 {
			s.obs.FirstToken(now.Sub(q.arrival))
		} else {
			gap := now.Sub(q.last) / time.Duration(n)
			for range n {
				s.obs.InterToken(gap)
			}
		}
	}
	q.last = now
}

// take appends tok, sampled from row, to q's output, streams it and
// retires q if it is done.
func (s *Scheduler) take(q *req, tok int32, row []float32) {
	q.appendOut(tok)
	q.pending = append(q.pending, tok)
	if q.r.Params.Logprobs {
		q.pendingLP = append(q.pendingLP, s.logprobs(row, tok, q.r.Params.TopLogprobs))
	}
	if f := q.finishAt(tok, len(q.out)); f != nil {
		s.retire(q, f)
	} else if len(q.pending) >= s.cfg.StreamInterval {
		s.flush(q, nil)
	}
}

// finishAt is how q ends when its n-th output token is tok: a stop token
// once min_tokens are out, or max_tokens reached; nil while it goes on.
func (q *req) finishAt(tok int32, n int) *Finish {
	switch {
	case q.stops[tok] && n >= q.r.Params.MinNewTokens:
		return &Finish{Reason: "stop", Matched: tok}
	case n >= q.r.Params.MaxNewTokens:
		return &Finish{Reason: "length", Matched: -1}
	}
	return nil
}

// retire removes a finished request from the running batch.
func (s *Scheduler) retire(q *req, f *Finish) {
	s.running = slices.DeleteFunc(s.running, func(r *req) bool { return r == q })
	s.finish(q, f)
}

// finish streams the last event and hands the request's KV to the prefix cache.
// finish ends a request that completed. Its token counts are recorded
// before its last event goes out: a client that reads /metrics as soon as
// its response ends must find them there.
func (s *Scheduler) finish(q *req, f *Finish) {
	s.release(q, true)
	if s.obs != nil {
		s.obs.Tokens(len(q.r.Prompt), len(q.out))
	}
	s.flush(q, f)
}

func (s *Scheduler) flush(q *req, f *Finish) {
	ev := Event{Tokens: q.pending, Logprobs: q.pendingLP, Finish: f,
		PromptTokens: len(q.r.Prompt), CompletionTokens: len(q.out), CachedTokens: q.cached}
	if q.promptLP != nil {
		ev.PromptLogprobs, q.promptLP = q.promptLP, nil
	}
	q.pending, q.pendingLP = nil, nil
	q.stream.push(ev)
}

// decodeStep runs one decode step of the running batch, making room first.
func (s *Scheduler) decodeStep() bool {
	if len(s.running) == 0 {
		return false
	}
	s.makeRoom()
	// The batch is the step's record for failStep (reused step to step),
	// not a copy beside it: nothing adds to inStep while it decodes.
	s.inStep = append(s.inStep, s.running...)
	batch := s.inStep[len(s.inStep)-len(s.running):]
	if s.spec != nil {
		s.verifyStep(batch)
		return true
	}
	out := s.exec.Forward(s.decodeSeqs(batch))
	s.decoded(batch, out, 0)
	return true
}

// decodeSeqs is one decode token for each request: its last generated
// token, new to the cache.
func (s *Scheduler) decodeSeqs(batch []*req) []model.Seq {
	seqs := make([]model.Seq, len(batch))
	for i, q := range batch {
		toks := q.tokens()
		p := len(toks) - 1
		seqs[i] = model.Seq{Tokens: toks[p:], Pos: p, Slots: q.slotsTo(s.kv, p+1), Logits: model.LastRow}
	}
	return seqs
}

// decoded takes the decode results of batch, whose sequences start at
// sequence first of out.
func (s *Scheduler) decoded(batch []*req, out *model.Output, first int) {
	if len(batch) == 0 {
		return
	}
	for i, q := range batch {
		q.filled = len(q.r.Prompt) + len(q.out)
		logits, _ := out.SeqRows(first + i)
		s.emit(q, logits.Row(0))
	}
	s.decayRatio()
}

// decayRatio moves the new-token ratio one decode step toward its floor.
func (s *Scheduler) decayRatio() {
	floor := s.initRatio() * minNewTokenFactor
	s.ratio = max(floor, s.ratio-(s.initRatio()-floor)/newTokenRatioDecay)
}

// makeRoom gives every running request the pages its next step needs (its
// next token, and with speculation the drafts after it), evicting the
// prefix cache and then retracting requests as SGLang does: fewest
// generated tokens first, then longest prompt, never the last one, until
// the rest have room for 20 more steps.
func (s *Scheduler) makeRoom() {
	ps := s.cfg.PageSize
	short := func(q *req) int {
		last := len(q.r.Prompt) + len(q.out) - 1 + s.lookahead(q)
		return max(0, last/ps+1-len(q.pages))
	}
	need := func() int {
		n := 0
		for _, q := range s.running {
			n += short(q)
		}
		return n
	}
	s.evictFor(need())
	if need() > s.kv.FreePages() {
		sort.SliceStable(s.running, func(i, j int) bool {
			a, b := s.running[i], s.running[j]
			if len(a.out) != len(b.out) {
				return len(a.out) > len(b.out)
			}
			return len(a.r.Prompt) < len(b.r.Prompt)
		})
		for len(s.running) > 1 && (s.kv.FreePages()*ps < len(s.running)*retractDecodeSteps || need() > s.kv.FreePages()) {
			q := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			s.move(q, "retract")
			s.release(q, false)
			q.retracted = true
			q.target = len(q.r.Prompt) + len(q.out)
			s.waiting = append([]*req{q}, s.waiting...)
			s.between = nil
			s.retracts.Add(1)
		}
		// SGLang re-estimates the ratio after retracting.
		var decoded, total int
		for _, q := range s.running {
			decoded += len(q.out)
			total += q.r.Params.MaxNewTokens
		}
		if total > 0 {
			s.ratio = min(1, float64(decoded+retractDecodeSteps*len(s.running))/float64(total))
		}
	}
	for _, q := range s.running {
		if n := short(q); n > 0 {
			more, ok := s.alloc(n)
			if !ok {
				panic("sched: no KV page for a running request after retraction")
			}
			q.pages = append(q.pages, more...)
		}
	}
}

func (s *Scheduler) publish() {
	used := s.kv.Slots() - s.kv.FreePages()*s.cfg.PageSize
	st := &Stats{
		Waiting: len(s.waiting), Running: len(s.running), KVUsedTokens: used, KVTotalTokens: s.kv.Slots(),
		Retractions: s.retracts.Load(), NewTokenRatio: s.ratio,
		PrefixQueried: s.prefixQueried, PrefixHit: s.prefixHit,
		SpecSteps: s.specSteps, SpecDrafted: s.specDrafted, SpecAccepted: s.specAccepted,
	}
	if s.chunked != nil {
		st.Running++
	}
	if s.radix != nil {
		st.CachedTokens = s.radix.Pages() * s.cfg.PageSize
	}
	s.stats.Store(st)
}
