// Package workload reads glmbench's workload files: phases of requests
// whose lengths, shared prefixes, sessions and arrival times are drawn from
// a spec, a data set or a trace. It expands a phase into the requests it
// will send, with target lengths in tokens; the load runner (package bench)
// turns those targets into text in the endpoint's own tokens and sends them.
//
// It does no I/O beyond reading the files a spec names, and imports no
// other glmbench package but internal ones.
package workload

import "time"

// Kinds of phase.
const (
	Fixed        = "fixed"
	Random       = "random"
	Dataset      = "dataset"
	SharedPrefix = "shared-prefix"
	MultiTurn    = "multi-turn"
	Trace        = "trace"
)

// File is a workload file: a list of phases, run in order.
type File struct {
	Phases []Phase `json:"phases"`
	// Source is where the file came from (a path, or "embedded NAME"), for
	// messages and the report; not read from the file.
	Source string `json:"-"`
}

// Phase is one phase of a workload file. Which fields apply depends on its
// Kind; a field that does not apply is refused.
type Phase struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Requests is how many requests the phase sends (fixed, random,
	// dataset, shared-prefix, trace: the first Requests lines). A
	// multi-turn phase sends Sessions × Turns.
	Requests int `json:"requests"`
	// Seed drives the phase's samplers and arrivals; nil: the run's --seed.
	Seed *int64 `json:"seed,omitempty"`

	// InputTokens and OutputTokens are the target usage.prompt_tokens and
	// max_tokens (fixed, random; dataset: OutputTokens is the default
	// max_tokens of an item that names none; multi-turn: each answer's).
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	// RangeRatio (random) draws each length uniformly from [r·L, L], as
	// SGLang's --random-range-ratio does: 1 is fixed, 0 from 1 to L.
	RangeRatio *float64 `json:"range_ratio,omitempty"`
	// Input and Output (random) draw lengths from a distribution instead.
	Input  *Dist `json:"input,omitempty"`
	Output *Dist `json:"output,omitempty"`

	// Path and Format (dataset, trace) name the file: format sharegpt,
	// jsonl or text for a data set (guessed from the name when empty),
	// jsonl for a trace. A relative path is from the workload file's
	// directory; "embedded:NAME" names a sample shipped in the binary.
	Path   string `json:"path,omitempty"`
	Format string `json:"format,omitempty"`

	// Groups, PrefixTokens and QuestionTokens (shared-prefix): G groups,
	// each with a system prompt of P tokens shared by its requests, and a
	// unique question making the whole prompt P+Q tokens.
	Groups         int `json:"groups,omitempty"`
	PrefixTokens   int `json:"prefix_tokens,omitempty"`
	QuestionTokens int `json:"question_tokens,omitempty"`

	// Sessions, Turns, UserTokens and ThinkTime (multi-turn): S sessions
	// of T turns; each turn sends the whole history plus a new user message
	// of U tokens, ThinkTime after the previous turn ended.
	Sessions   int      `json:"sessions,omitempty"`
	Turns      int      `json:"turns,omitempty"`
	UserTokens int      `json:"user_tokens,omitempty"`
	ThinkTime  Duration `json:"think_time,omitempty"`

	// TimeScale (trace) multiplies the trace's time offsets (0.5 replays
	// twice as fast); TimeUnit is its timestamps' unit, ms (mooncake's,
	// the default) or s.
	TimeScale float64 `json:"time_scale,omitempty"`
	TimeUnit  string  `json:"time_unit,omitempty"`

	// Arrival is when requests (multi-turn: sessions) start.
	Arrival Arrival `json:"arrival,omitempty"`
}

// Dist is a length distribution, bounded to [Min, Max] by redrawing.
type Dist struct {
	// Dist is uniform, normal or lognormal.
	Dist string `json:"dist"`
	// Mean and StdDev are the length's (for lognormal too: its log's
	// parameters follow from them). Uniform uses Min and Max only.
	Mean   float64 `json:"mean,omitempty"`
	StdDev float64 `json:"stddev,omitempty"`
	Min    int     `json:"min"`
	Max    int     `json:"max"`
}

// Arrival kinds.
const (
	Burst    = "burst"    // all at once (the default)
	Poisson  = "poisson"  // exponential gaps at Rate per second
	Gamma    = "gamma"    // gamma gaps at Rate, shape Burstiness (vLLM's --burstiness; 1 is Poisson)
	Ramp     = "ramp"     // Poisson whose rate grows linearly from From to To over the phase
	Constant = "constant" // one every 1/Rate seconds
	OwnTimes = "trace"    // a trace's own timestamps (a trace phase's default)
)

// Arrival is a phase's arrival process.
type Arrival struct {
	Kind       string  `json:"kind,omitempty"`
	Rate       float64 `json:"rate,omitempty"`
	Burstiness float64 `json:"burstiness,omitempty"`
	From       float64 `json:"from,omitempty"`
	To         float64 `json:"to,omitempty"`
}

// Duration is a YAML/JSON duration: a Go duration string ("500ms", "2s")
// or a number of seconds.
type Duration time.Duration

// Message is one chat message of a data set's item.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one request of an expanded phase, before its text is built.
type Request struct {
	// I is the request's index in the phase, 0-based, in the order Expand
	// returns them (multi-turn: session-major, I = (Session−1)·T + Turn−1).
	I int
	// At is the planned send time from the phase start. For a multi-turn
	// turn after the first it is not used: that turn is sent Think after
	// the previous turn of its session ended.
	At    time.Duration
	Think time.Duration
	// Session and Turn (multi-turn) and Group (shared-prefix), 1-based;
	// 0 when the kind has none.
	Session, Turn, Group int
	// Input is the target usage.prompt_tokens; 0 for a data set's item,
	// whose Messages are sent as they are.
	Input int
	// PrefixTokens (shared-prefix) is the target length of the group's
	// system prompt; UserTokens (multi-turn) that of each user message.
	// A multi-turn turn k's Input is (k−1)·(U+A) + U, A its Output: the
	// history's user messages and answers, and its new user message.
	PrefixTokens, UserTokens int
	// Output is max_tokens; 0 for a data set's item that names none, when
	// AnswerChars gives its answer's length in bytes instead (ShareGPT).
	Output      int
	AnswerChars int
	// Messages is a data set item's conversation, sent as it is; nil for
	// the generated kinds.
	Messages []Message
	// Line is where the item came from in its file (dataset, trace), for
	// messages: its line, or its row (1-based) in a parquet file; 0 for the
	// generated kinds.
	Line int
	// File is the parquet shard Line is a row of, when the phase's data
	// set is a folder of shards; "" otherwise (Line is of the phase's Path).
	File string
}
