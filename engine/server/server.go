// Package server is the reference engine's HTTP API, mirroring SGLang's
// OpenAI-compatible server: POST /v1/chat/completions and /v1/completions
// (streaming and not), GET /v1/models, /health, /server_info (and
// /get_server_info, its old name) and /metrics (Prometheus text).
//
// Handlers never block the model: they submit to the scheduler
// (engine/sched), which runs the model on its own goroutine, and read each
// request's events from its Stream. Every error is OpenAI-shaped JSON
// {"error": {"message", "type", "param", "code"}}, with code the HTTP
// status; an error after a stream's 200 is an SSE event of the same shape,
// then `data: [DONE]`, as SGLang sends it.
//
// Typical use:
//
//	metrics := server.NewMetrics()
//	s, _ := sched.New(cfg, model, tok.EOS(), tokenizer.MinVocabSize, metrics)
//	srv := server.New(server.Options{ModelName: "glmbench-nano"}, s, tok, metrics)
//	go s.Run()
//	http.ListenAndServe(addr, srv.Handler())
//	…
//	srv.Shutdown(ctx) // new requests 503, running ones end with an error event
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
)

// Options configure a Server.
type Options struct {
	// ModelName is the id /v1/models lists and requests must name (or
	// leave out); default "glmbench".
	ModelName string
	// ModelPath is reported by /server_info (a folder, or "preset:nano").
	ModelPath string
	// RateLimitConcurrency caps requests in flight on the two POST
	// endpoints; beyond it a request gets 429 with Retry-After: 1. 0 is off.
	RateLimitConcurrency int
	// RateLimitRPM admits that many POST requests per minute (a token
	// bucket holding a minute's worth); beyond it 429 with Retry-After. 0 is off.
	RateLimitRPM int
	// Version is reported by /server_info.
	Version string
	// Logger hears panics and refusals; nil discards.
	Logger *slog.Logger
	// Now is the limiter's clock; nil is time.Now (tests set it).
	Now func() time.Time
	// Faults, when set, make the server misbehave on purpose.
	Faults *Faults
	// Truth, when set, records every stream's arrival and event times.
	Truth *Truth

	// MaxBodyBytes bounds a POST body, checked while it is read: beyond it
	// the answer is 413. 0 is DefaultMaxBodyBytes or 32 bytes per token of
	// context, whichever is more.
	MaxBodyBytes int64
	// BodyTimeout is how long a POST body may take to arrive, from the end
	// of its headers; a body that is late is answered 408 and its
	// connection closed. 0 is DefaultBodyTimeout; negative is none.
	BodyTimeout time.Duration
	// MaxBufferedBytes bounds the bytes of all the bodies being read and
	// parsed at once; a body that would pass it gets 503 with Retry-After:
	// 1. 0 is DefaultMaxBufferedBytes, or 4 bodies of MaxBodyBytes if more.
	MaxBufferedBytes int64
	// MaxParsing bounds the bodies decoded and tokenized at once (the part
	// of a request whose memory grows with its body). 0 is
	// max(2, GOMAXPROCS).
	MaxParsing int
	// ParseWait is how long a request waits for a parsing slot before a
	// 503 with Retry-After: 1. 0 is DefaultParseWait.
	ParseWait time.Duration
	// ProfileDir, when set, turns on POST (or GET) /start_profile and
	// /stop_profile, which write a Go CPU profile of the process there
	// (profile.go); without it they answer 404, as vLLM's do when its
	// profiler is off.
	ProfileDir string
}

// Defaults of the request bounds; see Options.
const (
	// DefaultMaxBodyBytes is 4 MiB: the longest legitimate prompt of the
	// engine's byte-level tokenizer at the presets' 16,384-token context is
	// 16 KiB of text, 96 KiB if every byte were a JSON \u escape, so this
	// leaves 40× room for tools and messages and still bounds the memory
	// one body can cost.
	DefaultMaxBodyBytes = 4 << 20
	// bodyBytesPerToken sizes the body limit of a longer context: a token
	// id as JSON is at most 7 bytes, a byte of text at most 6 (\u00XX).
	bodyBytesPerToken = 32
	// DefaultMaxBufferedBytes holds a burst of 4,096 requests of 64 KiB
	// (a sweep's largest, at the presets' context) at once.
	DefaultMaxBufferedBytes = 256 << 20
	// DefaultBodyTimeout lets a body of the default limit arrive at about
	// 140 KB/s: far slower than any client on a working network.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultParseWait is long enough for a burst of thousands of small
	// bodies to be parsed one by one (each takes microseconds to a
	// millisecond), short enough that a client learns in seconds.
	DefaultParseWait = 10 * time.Second
)

// Server serves the OpenAI-compatible API over a running scheduler.
type Server struct {
	opts     Options
	sched    *sched.Scheduler
	tok      *tokenizer.Tokenizer
	metrics  *Metrics
	limiter  *limiter
	parsing  chan struct{} // a slot per body being parsed
	maxBody  int64
	buffered atomic.Int64 // bytes of the bodies being read and parsed
	handler  http.Handler
	created  int64 // unix seconds, /v1/models' created

	ready atomic.Bool
	// checkpoint is the weights served (SetCheckpoint); nil: Options.ModelPath's.
	checkpoint atomic.Pointer[Checkpoint]

	mu       sync.Mutex
	closing  bool
	inflight int
	idle     chan struct{} // closed when closing with nothing in flight

	// prof is the CPU profile the profiler routes write.
	prof profiler

	// hard ends every handler's wait when Shutdown's deadline passes.
	hard     context.Context
	hardStop context.CancelFunc
}

// New returns a server for s, which the caller runs (go s.Run()); metrics
// must be the Observer s was built with (nil: no timing metrics). The
// server is ready at once: call SetReady(false) first to keep /health at
// 503 until the caller's own warm-up ends.
func New(opts Options, s *sched.Scheduler, tok *tokenizer.Tokenizer, metrics *Metrics) *Server {
	if opts.ModelName == "" {
		opts.ModelName = "glmbench"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if metrics == nil {
		metrics = NewMetrics()
	}
	metrics.setModel(opts.ModelName)
	concurrency := opts.RateLimitConcurrency
	if opts.Faults != nil && opts.Faults.RateLimit > 0 && (concurrency == 0 || opts.Faults.RateLimit < concurrency) {
		concurrency = opts.Faults.RateLimit
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = max(DefaultMaxBodyBytes, bodyBytesPerToken*int64(s.Config().ContextLength))
	}
	if opts.MaxBufferedBytes <= 0 {
		opts.MaxBufferedBytes = max(DefaultMaxBufferedBytes, 4*opts.MaxBodyBytes)
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.MaxParsing <= 0 {
		opts.MaxParsing = max(2, runtime.GOMAXPROCS(0))
	}
	if opts.ParseWait <= 0 {
		opts.ParseWait = DefaultParseWait
	}
	s.SetLogger(opts.Logger)
	srv := &Server{
		opts: opts, sched: s, tok: tok, metrics: metrics,
		limiter: newLimiter(concurrency, opts.RateLimitRPM, opts.Now),
		parsing: make(chan struct{}, opts.MaxParsing), maxBody: opts.MaxBodyBytes,
		created: time.Now().Unix(), idle: make(chan struct{}),
	}
	srv.prof.dir = opts.ProfileDir
	srv.hard, srv.hardStop = context.WithCancel(context.Background())
	srv.ready.Store(true)
	srv.handler = srv.routes()
	return srv
}

// SetReady sets whether /health answers 200 and the POST endpoints take
// requests (503 otherwise). Shutdown makes the server not ready for good.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// BodyTimeout is the deadline of a POST body in effect: Options.BodyTimeout
// with its default applied, negative for none.
func (s *Server) BodyTimeout() time.Duration { return s.opts.BodyTimeout }

// contextLength is the longest sequence a request may reach, the
// scheduler's context_length: reported as max_model_len, and the bound of a
// chat request's default max_tokens.
func (s *Server) contextLength() int { return s.sched.Config().ContextLength }

// Shutdown stops the server gracefully: new requests get 503 at once; the
// scheduler's Shutdown ends running requests, whose streams then end with
// an error event (503 for a request not yet answered); it waits for the
// handlers to return. When ctx ends first, handlers still waiting are cut
// loose with the same error and Shutdown returns ctx's error. The HTTP
// listener is the caller's (http.Server.Shutdown after this).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		if s.inflight == 0 {
			close(s.idle)
		}
	}
	s.mu.Unlock()
	s.ready.Store(false)
	// A profile still running is finished, so its file is whole.
	s.prof.stop()
	err := s.sched.Shutdown(ctx)
	select {
	case <-s.idle:
	case <-ctx.Done():
		s.hardStop()
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// msgShuttingDown is the message of every 503 that shutdown causes.
const msgShuttingDown = "The server is shutting down."

// unavailableErr is the 503 of a server that takes no requests: it is
// shutting down, or not ready yet.
func (s *Server) unavailableErr() *apiError {
	if s.shuttingDown() {
		return unavailable(msgShuttingDown)
	}
	return unavailable("The server is not ready yet.")
}

// enter counts a generation request in; false once shutdown began.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight++
	return true
}

func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.closing && s.inflight == 0 {
		close(s.idle)
	}
}

// route is one path's handlers by method.
type route map[string]http.HandlerFunc

// routes serves SGLang's route names: /server_info and /model_info, and
// their old names /get_server_info and /get_model_info, which SGLang keeps
// as deprecated aliases.
func (s *Server) routes() http.Handler {
	table := map[string]route{
		"/v1/chat/completions": {http.MethodPost: s.generation(s.handleChat)},
		"/v1/completions":      {http.MethodPost: s.generation(s.handleCompletion)},
		"/v1/models":           {http.MethodGet: s.handleModels},
		"/health":              {http.MethodGet: s.handleHealth},
		"/health_generate":     {http.MethodGet: s.handleHealth},
		"/server_info":         {http.MethodGet: s.handleServerInfo},
		"/get_server_info":     {http.MethodGet: s.handleServerInfo},
		"/model_info":          {http.MethodGet: s.handleModelInfo},
		"/get_model_info":      {http.MethodGet: s.handleModelInfo},
		"/metrics":             {http.MethodGet: s.handleMetrics},
		"/start_profile":       {http.MethodPost: s.handleStartProfile, http.MethodGet: s.handleStartProfile},
		"/stop_profile":        {http.MethodPost: s.handleStopProfile, http.MethodGet: s.handleStopProfile},
	}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		rt, ok := table[path]
		if !ok && strings.HasPrefix(path, "/v1/models/") {
			rt, ok = route{http.MethodGet: s.handleModel}, true
		}
		if !ok {
			writeError(w, notFound("Route %s %s not found.", r.Method, path))
			return
		}
		h, ok := rt[r.Method]
		if _, action := rt[http.MethodPost]; !ok && r.Method == http.MethodHead && !action {
			// HEAD is a GET without its body, for a route that only reads:
			// one that also takes POST (the profiler's, SGLang-style GET or
			// POST actions) acts on a GET, and a HEAD must not.
			h, ok = rt[http.MethodGet]
		}
		if !ok {
			allow := make([]string, 0, len(rt))
			for m := range rt {
				allow = append(allow, m)
			}
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed,
				Message: fmt.Sprintf("Method %s is not allowed on %s; use %s.", r.Method, path, strings.Join(allow, ", "))})
			return
		}
		h(w, r)
	})
	return s.recoverer(mux)
}

// generation wraps a POST endpoint: readiness first; then the body is read
// whole, within its size limit, the body budget and its read deadline,
// before anything else is held for the request, so a client that trickles
// its body holds no limiter slot and no parsing slot, only its connection
// and the bytes it sent until BodyTimeout; then the gateway limiter; then
// the in-flight accounting that Shutdown waits on.
func (s *Server) generation(h func(http.ResponseWriter, *http.Request, *body)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() || s.shuttingDown() {
			s.metrics.rejected("unavailable")
			writeError(w, s.unavailableErr())
			return
		}
		body, err := s.readBody(w, r)
		if err != nil {
			if err.Status != http.StatusBadRequest {
				w.Header().Set("Connection", "close")
			}
			writeError(w, err)
			return
		}
		defer body.release() // parse releases it first, once the body is decoded
		release, retryAfter, ok := s.limiter.acquire()
		if !ok {
			s.metrics.rejected("rate_limit")
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
			writeError(w, &apiError{Status: http.StatusTooManyRequests,
				Message: "Too many requests: the gateway rate limit is exceeded. Retry after " + fmt.Sprint(retryAfter) + " s."})
			return
		}
		defer release()
		if !s.enter() {
			s.metrics.rejected("unavailable")
			writeError(w, s.unavailableErr())
			return
		}
		defer s.leave()
		h(w, r, body)
	}
}

// parse runs f, which decodes and validates a body, in one of the
// MaxParsing slots: the memory a body costs while it becomes Go values and
// tokens is bounded by the body limit times the slots. A request that
// finds no slot within ParseWait gets 503 with Retry-After: 1 (the
// server's own overload, which SGLang also answers with 503).
func (s *Server) parse(w http.ResponseWriter, r *http.Request, b *body, f func([]byte) *apiError) *apiError {
	defer b.release()
	select {
	case s.parsing <- struct{}{}:
	default:
		t := time.NewTimer(s.opts.ParseWait)
		defer t.Stop()
		select {
		case s.parsing <- struct{}{}:
		case <-t.C:
			s.metrics.rejected("parse_busy")
			w.Header().Set("Retry-After", "1")
			return unavailable("The server is busy reading other requests; retry after 1 s.")
		case <-r.Context().Done():
			return unavailable("The request was cancelled while waiting to be read.")
		}
	}
	defer func() { <-s.parsing }()
	return f(b.data)
}

// recoverer keeps a panicking handler from taking the process down: it
// logs the panic and answers 500 if nothing was written yet (there should
// never be one).
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.opts.Logger.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !rw.wrote {
				writeError(rw, &apiError{Status: http.StatusInternalServerError, Message: "Internal server error."})
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

// trackingWriter notes whether a response has begun; Unwrap lets
// http.ResponseController reach the connection's Flush.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// submit hands a validated request to the scheduler.
func (s *Server) submit(id string, spec *genSpec) (*sched.Stream, *apiError) {
	st, err := s.sched.Submit(&sched.Request{ID: id, Prompt: spec.prompt, Params: spec.params})
	if err != nil {
		return nil, s.apiErrorOf(err)
	}
	return st, nil
}

// errServerAbort ends a request the scheduler aborted without being asked
// to and without a reason of its own.
var errServerAbort = errors.New("The request was aborted by the server.")

// apiErrorOf is the client error for an error of the scheduler's, whether
// Submit returned it or the request's Finish carried it: a refused request
// keeps its status; queue overflow and shutdown are 503s.
func (s *Server) apiErrorOf(err error) *apiError {
	var re *sched.RequestError
	switch {
	case errors.As(err, &re):
		return &apiError{Status: re.Status, Message: re.Message}
	case errors.Is(err, sched.ErrQueueFull):
		// SGLang answers queue overflow with 503, not 429.
		s.metrics.rejected("queue_full")
		return unavailable(sched.ErrQueueFull.Error())
	case errors.Is(err, sched.ErrShuttingDown):
		return unavailable(msgShuttingDown)
	}
	return unavailable(err.Error())
}

// waitContext is a request's context that also ends when Shutdown's
// deadline passes, so no handler outlives it waiting on the scheduler.
func (s *Server) waitContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.hard, cancel)
	return ctx, func() { stop(); cancel() }
}

// waitError is the error for a stream wait that ended early: nil when the
// client went away (nothing is left to answer), else a 503.
func waitError(r *http.Request) *apiError {
	if r.Context().Err() != nil {
		return nil
	}
	return unavailable(msgShuttingDown)
}

// newID returns prefix and 32 random hex digits, as SGLang's uuid4 hex.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
