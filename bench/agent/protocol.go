// Package agent runs one phase of glmbench's load from several hosts as
// one measured run: an agent server (glmbench agent --listen ADDR) on each
// host, and a coordinator that partitions each phase among them, starts
// them together and recomputes the phase from all of their records.
//
// The schedule is partitioned, not dispatched: every agent builds the
// phase's same seeded schedule (bench.RunPhase with Options.Shard) and
// sends request i when i mod N equals its index. Calibration stays on the
// coordinator; agents get the calibrated filler length.
//
// The protocol is HTTP with JSON bodies, on the agent's listen address:
//
//	GET  /v1/agent/ping    → Pong: the agent's name, its clock (for the
//	                         coordinator's NTP-style offset measurement),
//	                         its protocol version and instance id (and a
//	                         Kubernetes readiness probe).
//	POST /v1/agent/prepare ← Prepare (the phase plan) → Ready, or 400 with
//	                         a one-line error, once a burst's connections
//	                         are open (a phase spread over time dials as it
//	                         goes, as on one host); Ready's token names
//	                         the prepare. It replaces any prepared phase.
//	POST /v1/agent/start   ← Start (the start time on the agent's own
//	                         clock, within 10 min of it, and the prepare's
//	                         token) → 200 and a JSONL stream of Line, each
//	                         flushed as it is written: {"began_unix_nano":…}
//	                         when the phase's clock starts, {"sent":…} as
//	                         each request is sent, {"record":…} as each ends
//	                         (or is recorded as not sent), then one
//	                         {"end":…} when the phase is over, and {}
//	                         (a heartbeat) when it has been quiet for
//	                         Heartbeat. 409 when nothing is prepared, the
//	                         token is another prepare's, or a phase is
//	                         running.
//	POST /v1/agent/cancel  → 204: the running phase ends as interrupted
//	                         (Ctrl-C on the coordinator); its records still
//	                         stream back.
//
// A coordinator whose /v1/agent/start connection drops is gone: the agent
// cancels its phase.
//
// Secrets never travel. The agent reads the endpoint's API key from its
// own environment (ServerOptions.APIKeyEnv, through ServerOptions.Getenv);
// the plan carries the endpoint's base URL and model only. An extra header
// read from the environment (--header-env NAME=VAR) travels as its name and
// VAR's name, and each agent reads VAR from its own environment, if its
// operator allowed it (glmbench agent --header-env-allow VAR: a plan could
// otherwise have an agent send any of its variables to an endpoint of the
// plan's choosing); an extra header given with its value (--header) is
// refused by CheckOptions.
//
// The routes that make an agent send load (prepare, start, cancel) want
// the token an agent was started with (glmbench agent --token-env VAR;
// ServerOptions.Token), as "Authorization: Bearer <token>", where it has
// one: else anyone who reaches the agent's port could have it send load,
// with its API key, to an endpoint of their choosing. A ping carrying a
// token has it checked, so a coordinator learns of a wrong one before any
// load; one carrying none is answered (a Kubernetes readiness probe's), and
// its pong says whether the agent asks for a token. A wrong or missing
// token is 401, and the token is never written anywhere.
//
// Nor do files. An https endpoint's certificate is verified on each agent
// against the agent's own trust (glmbench agent --ca-cert FILE,
// ServerOptions.Trust), since the coordinator's CA file is a path on its
// machine; the coordinator's --insecure travels in the plan (it is a
// statement about the endpoint, not about a host, and an agent left
// verifying would fail every request), and an agent says on its stderr
// that it does not verify. A client certificate (mTLS) is the agent's own
// too (glmbench agent --client-cert, --client-key): a key never travels.
// An agent that cannot verify the certificate
// answers the prepare 400 with the reason in one line, and the
// coordinator counts it lost with that reason, before any load.
package agent

import (
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// Routes of the protocol.
const (
	RoutePing    = "/v1/agent/ping"
	RoutePrepare = "/v1/agent/prepare"
	RouteStart   = "/v1/agent/start"
	RouteCancel  = "/v1/agent/cancel"
)

// Proto is the protocol's version: a coordinator refuses an agent whose
// pongs give another (an agent of another glmbench version, whose plan
// fields might not mean the same). 2: the plan's shape carries the API
// (chat or completions), which an agent of protocol 1 would not read and
// would send every request as chat. 3: the shape carries --extra-body
// (bench.Shape.Extra), which an agent of protocol 2 would leave out, and
// the plan the coordinator's --insecure (Prepare.Insecure), which one
// would ignore, verifying what the coordinator was told not to. 4: the
// plan carries --header-env's headers (Prepare.HeaderEnv), which an agent
// of protocol 3 would not send. 5: pongs say whether the agent asks for
// a token (Pong.TokenRequired), which a coordinator of protocol 4 would
// not send.
const Proto = 5

// Pong is the answer to a ping.
type Pong struct {
	Name string `json:"name"`
	// Now is the agent's clock, in nanoseconds since the Unix epoch.
	Now int64 `json:"now_unix_nano"`
	// Proto is the agent's protocol version; Instance is random per agent
	// process, so that a coordinator sees two addresses of one agent (a
	// dual-stack Service's IPv4 and IPv6) for what they are.
	Proto    int    `json:"proto"`
	Instance string `json:"instance"`
	// TokenRequired says the agent was started with --token-env: every
	// route but an unauthenticated ping (a readiness probe's) then wants
	// "Authorization: Bearer <token>".
	TokenRequired bool `json:"token_required,omitempty"`
}

// Prepare is the phase plan a coordinator sends an agent.
type Prepare struct {
	// BaseURL and Model are the endpoint's; its key is the agent's own.
	BaseURL string      `json:"base_url"`
	Model   string      `json:"model"`
	Shape   bench.Shape `json:"shape"`
	Spec    bench.Spec  `json:"spec"`
	// Chars is the calibrated filler length in bytes; PromptTokens what the
	// endpoint counted for it (-1: no usage). First is the prompt number
	// of the phase's request 0 (bench.Plan.First).
	Chars        int    `json:"chars"`
	PromptTokens int    `json:"prompt_tokens"`
	First        int    `json:"first"`
	Nonce        string `json:"nonce"`
	Seed         int64  `json:"seed"`
	// RequestRate is the whole phase's rate (every agent builds the whole
	// schedule); MaxConcurrency this agent's share of the run's.
	RequestRate    float64                `json:"request_rate,omitempty"`
	MaxConcurrency int                    `json:"max_concurrency,omitempty"`
	Limits         endpoints.StreamLimits `json:"limits"`
	// ConnectTimeout and PhaseCap are nanoseconds.
	ConnectTimeout time.Duration `json:"connect_timeout_ns"`
	PhaseCap       time.Duration `json:"phase_cap_ns,omitempty"`
	Shard          bench.Shard   `json:"shard"`
	// Insecure is the coordinator's --insecure: the agent does not verify
	// the endpoint's certificate (its own --ca-cert then goes unused).
	Insecure bool `json:"insecure,omitempty"`
	// HeaderEnv maps each extra header to the environment variable the
	// agent reads its value from (the coordinator's --header-env).
	HeaderEnv map[string]string `json:"header_env,omitempty"`
}

// Ready is the answer to a prepare.
type Ready struct {
	Name string `json:"name"`
	// Requests is how many of the phase's requests the agent owns.
	Requests int `json:"requests"`
	// Token names this prepare: the start must give it back, so that a
	// second coordinator's prepare cannot be started by the first.
	Token string `json:"token"`
}

// Start tells an agent when to begin the prepared phase.
type Start struct {
	// At is the start time on the agent's own clock, in nanoseconds since
	// the Unix epoch.
	At int64 `json:"at_unix_nano"`
	// Token is the prepare's (Ready.Token): a start of another one is 409.
	Token string `json:"token"`
}

// Heartbeat is how often an agent writes an empty line ({}) on a start's
// stream that has been quiet, and IdleTimeout how long a coordinator waits
// on a silent stream (no line, not even a heartbeat) before it counts the
// agent lost: a hung or partitioned agent cannot hang the run.
var (
	Heartbeat   = 2 * time.Second
	IdleTimeout = 30 * time.Second
)

// Line is one line of a start's JSONL answer: a record, a heartbeat (no
// field set) or the end.
type Line struct {
	// Began is when the phase's clock started, on the agent's clock (ns
	// since the Unix epoch).
	Began  int64          `json:"began_unix_nano,omitempty"`
	Sent   *Sent          `json:"sent,omitempty"`
	Record *schema.Record `json:"record,omitempty"`
	End    *End           `json:"end,omitempty"`
}

// Sent says a request was sent: its index and its send offset in seconds
// from the phase's start. A coordinator counts a request sent but never
// recorded (its agent died) as cancelled, not as never sent.
type Sent struct {
	I      int     `json:"i"`
	Offset float64 `json:"offset"`
}

// End closes a start's answer.
type End struct {
	// Began is when the phase's clock started on the agent's clock (ns
	// since the Unix epoch): the records' send_offset counts from it.
	Began  int64  `json:"began_unix_nano"`
	Status string `json:"status"`
	// Records is how many record lines came before.
	Records int `json:"records"`
}
