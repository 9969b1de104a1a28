package agent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// maxChars bounds a prepare's filler length (64 MiB: far over any
// context), and maxStartAhead how far from the agent's clock a start time
// may be (a coordinator's is a fraction of a second ahead): a hostile or
// broken plan gets a 400, not an agent busy for hours.
const (
	maxChars      = 64 << 20
	maxStartAhead = 10 * time.Minute
)

// ServerOptions configure an agent server.
type ServerOptions struct {
	// Name is the agent's name in pongs and readies (its pod's name, or
	// its address).
	Name string
	// APIKeyEnv names the variable the agent reads the endpoint's API key
	// from (endpoints.DefaultAPIKeyEnv when empty; then it may be unset).
	APIKeyEnv string
	// Getenv reads the agent's environment (os.Getenv when nil).
	Getenv func(string) string
	// HeaderEnvAllow are the variables a plan's header may be read from
	// (--header-env-allow): a plan naming another is refused, else anyone
	// who reaches the agent could have it send any of its variables
	// (AWS_SECRET_ACCESS_KEY) to an endpoint of their choosing.
	HeaderEnvAllow []string
	// Token is the value of the agent's --token-env variable: when set,
	// prepare, start and cancel want "Authorization: Bearer <Token>"
	// (see the package doc).
	Token string
	// Trust is how the agent verifies an https endpoint's certificate (its
	// --ca-cert), and the client certificate it sends one that asks (its
	// --client-cert, --client-key); a plan's Insecure turns verification
	// off, the client certificate kept.
	Trust endpoints.Trust
	// ErrOut is where the agent says, once, that a plan turned
	// verification off (nil: nowhere).
	ErrOut io.Writer
	// Now is the agent's clock (time.Now when nil): a test offsets it to
	// play a host whose clock is off. Only pings and start times read it;
	// the phase itself runs on the monotonic clock.
	Now func() time.Time
}

// Server is an agent: it runs the phases a coordinator prepares and
// starts, one at a time.
type Server struct {
	opts     ServerOptions
	mux      *http.ServeMux
	instance string

	// insecureSaid makes the agent say once that it does not verify.
	insecureSaid sync.Once

	mu       sync.Mutex
	prepared *prepared
	running  bool
	cancel   context.CancelFunc
}

// prepared is a phase ready to start: for a burst, its connections open
// in o.Pool.
type prepared struct {
	o     *bench.Options
	plan  bench.Plan
	token string
}

// close releases a prepared phase that will not start.
func (p *prepared) close() {
	if p != nil && p.o.Pool != nil {
		p.o.Pool.Close()
	}
}

// NewServer returns an agent server; Handler serves its protocol.
func NewServer(opts ServerOptions) *Server {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), instance: randomID()}
	s.mux.HandleFunc("GET "+RoutePing, s.ping)
	s.mux.HandleFunc("POST "+RoutePrepare, s.withToken(s.prepare))
	s.mux.HandleFunc("POST "+RouteStart, s.withToken(s.start))
	s.mux.HandleFunc("POST "+RouteCancel, s.withToken(s.cancelPhase))
	return s
}

// withToken answers 401, before h reads anything, a request without the
// agent's token, where it has one.
func (s *Server) withToken(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token != "" && !s.tokenGiven(r) {
			unauthorized(w, r)
			return
		}
		h(w, r)
	}
}

// tokenGiven says whether r carries the agent's token. The comparison
// takes the same time wherever the two differ.
func (s *Server) tokenGiven(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

// unauthorized is the 401 for a wrong or missing token; it quotes
// neither.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="glmbench agent"`)
	msg := "this agent asks for a token: give glmbench run --agents-token-env the variable holding the agent's --token-env value"
	if r.Header.Get("Authorization") != "" {
		msg = "this agent refused the token: it is not the one the agent was started with (--token-env)"
	}
	http.Error(w, msg, http.StatusUnauthorized)
}

// Handler serves the agent's routes (see the package doc).
func (s *Server) Handler() http.Handler { return s.mux }

// ping answers anyone (a readiness probe carries no token), but checks a
// token it is given, so a coordinator learns of a wrong one before any
// load.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token != "" && r.Header.Get("Authorization") != "" && !s.tokenGiven(r) {
		unauthorized(w, r)
		return
	}
	writeJSON(w, Pong{Name: s.opts.Name, Now: s.opts.Now().UnixNano(), Proto: Proto, Instance: s.instance, TokenRequired: s.opts.Token != ""})
}

func (s *Server) prepare(w http.ResponseWriter, r *http.Request) {
	var p Prepare
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p); err != nil {
		http.Error(w, "prepare: "+err.Error(), http.StatusBadRequest)
		return
	}
	pp, err := s.options(p)
	if err == nil {
		err = s.checkTLS(r.Context(), pp.o)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running {
		http.Error(w, "a phase is running", http.StatusConflict)
		return
	}
	pp.token = randomID()
	pp.warm(r.Context())
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		pp.close()
		http.Error(w, "a phase is running", http.StatusConflict)
		return
	}
	s.prepared.close()
	s.prepared = pp
	s.mu.Unlock()
	writeJSON(w, Ready{Name: s.opts.Name, Requests: p.Shard.Requests(p.Spec.N), Token: pp.token})
}

// options turns a plan into the options and plan bench.RunPhase takes,
// with the endpoint's key from the agent's own environment.
func (s *Server) options(p Prepare) (*prepared, error) {
	if p.Shard.Count < 1 || p.Shard.Index < 0 || p.Shard.Index >= p.Shard.Count {
		return nil, badinput.Errorf("prepare: shard %d of %d is not one of 0..count-1", p.Shard.Index, p.Shard.Count)
	}
	if p.Spec.N < 0 || p.Spec.N > workload.MaxRequests || p.Chars < 0 || p.Chars > maxChars {
		return nil, badinput.Errorf("prepare: phase %s has %d requests and a filler of %d chars (at most %d and %d)", p.Spec.Name, p.Spec.N, p.Chars, workload.MaxRequests, maxChars)
	}
	f := endpoints.Flags{Endpoint: p.BaseURL, Model: p.Model, APIKeyEnv: s.opts.APIKeyEnv, APIKeyEnvSet: s.opts.APIKeyEnv != ""}
	for _, name := range slices.Sorted(maps.Keys(p.HeaderEnv)) {
		env := p.HeaderEnv[name]
		if !slices.Contains(s.opts.HeaderEnvAllow, env) {
			return nil, badinput.Errorf("agent %s: the plan reads header %q from the environment variable %q, which this agent was not allowed to read: start it with --header-env-allow %s", s.opts.Name, name, env, env)
		}
		f.HeaderEnv = append(f.HeaderEnv, name+"="+env)
	}
	ep, err := endpoints.Resolve(f, s.opts.Getenv)
	if err != nil {
		return nil, err
	}
	ep.Trust = s.opts.Trust
	ep.HideExtraSecrets(p.Shape.Extra) // a key sent in the body, quoted back in an error
	if p.Insecure {
		// The agent's client certificate is still sent.
		ep.Trust = s.opts.Trust.SkipVerify()
	}
	shard := p.Shard
	o := &bench.Options{
		Endpoint: ep, Shape: p.Shape, Limits: p.Limits, ConnectTimeout: p.ConnectTimeout,
		PhaseCap: p.PhaseCap, RequestRate: p.RequestRate, MaxConcurrency: p.MaxConcurrency,
		Seed: p.Seed, Nonce: p.Nonce, Shard: &shard,
	}
	plan := bench.Plan{Spec: p.Spec, Cal: bench.Calibration{Target: p.Spec.In, Chars: p.Chars, PromptTokens: p.PromptTokens}, First: p.First}
	return &prepared{o: o, plan: plan}, nil
}

// checkTLS completes one handshake with an https endpoint before the
// agent answers ready: a certificate the agent cannot verify is said in
// one line, with the agent's fix, instead of as every request's connect
// error. Any other failure to connect is left to the phase to record, as
// on one host. A plan that turns verification off is said once on ErrOut.
func (s *Server) checkTLS(ctx context.Context, o *bench.Options) error {
	ep := o.Endpoint
	if ep.Trust.Insecure && s.opts.ErrOut != nil && strings.HasPrefix(ep.BaseURL, "https:") {
		s.insecureSaid.Do(func() {
			fmt.Fprintf(s.opts.ErrOut, "glmbench: warning: agent %s: the coordinator's --insecure: %s's TLS certificate is NOT verified\n", s.opts.Name, endpoints.RedactURL(ep.BaseURL))
		})
	}
	msg, ok := ep.TLSFailure(ep.CheckTLS(ctx, o.ConnectTimeout))
	if !ok {
		return nil
	}
	return fmt.Errorf("agent %s: the endpoint %s: %s (--ca-cert on the agent, --insecure on the coordinator, --client-cert and --client-key on the agent)", s.opts.Name, endpoints.RedactURL(ep.BaseURL), msg)
}

// warm opens a burst's connections before the agent answers ready, as
// bench.RunPhase would before its clock starts; requests spread over time
// dial as they go (see RunPhase).
func (p *prepared) warm(ctx context.Context) {
	if p.o.RequestRate > 0 {
		return
	}
	conns := p.o.Shard.Requests(p.plan.Spec.N)
	if p.o.MaxConcurrency > 0 {
		conns = min(conns, p.o.MaxConcurrency)
	}
	if conns == 0 {
		return
	}
	p.o.Pool = endpoints.NewPool(p.o.Endpoint, endpoints.TransportOptions{Conns: conns, ConnectTimeout: p.o.ConnectTimeout})
	wctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout+5*time.Second)
	defer cancel()
	p.o.Pool.Warm(wctx, conns)
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	var st Start
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&st); err != nil {
		http.Error(w, "start: "+err.Error(), http.StatusBadRequest)
		return
	}
	if d := time.Duration(st.At - s.opts.Now().UnixNano()); st.At == 0 || d > maxStartAhead || d < -maxStartAhead {
		http.Error(w, fmt.Sprintf("start: at_unix_nano %d is not within %s of the agent's clock", st.At, maxStartAhead), http.StatusBadRequest)
		return
	}
	// The phase ends when the coordinator cancels it or its connection
	// drops (the coordinator is gone).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s.mu.Lock()
	pp := s.prepared
	if pp == nil || s.running {
		s.mu.Unlock()
		http.Error(w, "start: no phase prepared, or one is running", http.StatusConflict)
		return
	}
	if st.Token != pp.token {
		// Another coordinator prepared since: its phase is not ours to run.
		s.mu.Unlock()
		msg := "start: the prepared phase is another prepare's (two coordinators?)"
		if st.Token == "" {
			msg = fmt.Sprintf("start: no prepare token: a coordinator of another glmbench version? (agent protocol %d)", Proto)
		}
		http.Error(w, msg, http.StatusConflict)
		return
	}
	s.prepared, s.running, s.cancel = nil, true, cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running, s.cancel = false, nil
		s.mu.Unlock()
	}()

	// The start on the agent's clock, as a time on the monotonic one.
	o := *pp.o
	o.StartAt = time.Now().Add(time.Unix(0, st.At).Sub(s.opts.Now()))
	w.Header().Set("Content-Type", "application/jsonl")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	// Room for every line of the phase, so no request waits on the writer.
	lines := make(chan Line, 2*pp.plan.Spec.N+8)
	var start time.Time
	o.OnStart = func(at time.Time) {
		start = at
		lines <- Line{Began: s.agentClock(at).UnixNano()}
	}
	o.OnSend = func(i int, at time.Time) {
		lines <- Line{Sent: &Sent{I: i, Offset: at.Sub(start).Seconds()}}
	}
	o.OnRecord = func(rec *schema.Record) {
		r := *rec
		lines <- Line{Record: &r}
	}
	var written int
	done := make(chan struct{})
	go func() {
		defer close(done)
		written = streamLines(w, fl, lines)
	}()
	run := bench.RunPhase(ctx, &o, pp.plan)
	close(lines)
	<-done
	began := s.agentClock(run.Start)
	b, _ := json.Marshal(Line{End: &End{Began: began.UnixNano(), Status: run.Result.Status, Records: written}})
	w.Write(append(b, '\n'))
	if fl != nil {
		fl.Flush()
	}
}

// streamLines writes each line of lines to w as JSONL until lines is
// closed, and returns how many of them were records written. A heartbeat
// ({}) goes out whenever the stream has been quiet for a while, so that a
// coordinator tells a silent agent (a hung host, a partition) from one
// whose requests are simply long.
func streamLines(w http.ResponseWriter, fl http.Flusher, lines <-chan Line) (written int) {
	beat := time.NewTicker(Heartbeat)
	defer beat.Stop()
	for {
		var b []byte
		var l Line
		select {
		case ll, ok := <-lines:
			if !ok {
				return written
			}
			var err error
			if b, err = json.Marshal(ll); err != nil {
				continue
			}
			l = ll
		case <-beat.C:
			b = []byte("{}")
		}
		// A failed write is a coordinator gone: the phase is cancelled
		// through the request's context; the lines are drained all the same.
		if _, err := w.Write(append(b, '\n')); err == nil {
			if l.Record != nil {
				written++
			}
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// agentClock is t, a time on the local (monotonic) clock, on the agent's
// clock (ServerOptions.Now).
func (s *Server) agentClock(t time.Time) time.Time { return s.opts.Now().Add(t.Sub(time.Now())) }

func (s *Server) cancelPhase(w http.ResponseWriter, r *http.Request) {
	s.Cancel()
	w.WriteHeader(http.StatusNoContent)
}

// Cancel ends the running phase, if any, as interrupted: its records and
// end line still stream to the coordinator (an agent told to stop, as a
// Kubernetes pod by SIGTERM, calls it before it shuts its server down).
func (s *Server) Cancel() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// randomID is 16 random hex digits.
func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
