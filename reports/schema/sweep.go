package schema

// SweepResult is one `glmbench sweep`: a series of steady-state points of one
// request shape at rising load, and the capacity they bracket.
type SweepResult struct {
	// Name is the sweep's phase name, as its records' phase.
	Name      string `json:"name"`
	InputLen  int    `json:"input_len"`
	OutputLen int    `json:"output_len"`
	// Mode is SweepConcurrency (closed loop) or SweepRate (Poisson arrivals).
	Mode string `json:"mode"`
	// Search is "auto" (doubling, then bisection) or "list" (the loads given).
	Search string `json:"search"`
	// SLOs are the objectives as given; Attainment is the share of a
	// point's requests that must meet them for the point to count as good.
	SLOs       []string `json:"slos"`
	Attainment float64  `json:"attainment"`
	// WarmupSec, DurationSec and DrainSec are each point's timeline: the
	// warm-up, the measured window, and the longest wait after it for the
	// window's requests to end. SliceSec is the slice length.
	WarmupSec   float64      `json:"warmup_sec"`
	DurationSec float64      `json:"duration_sec"`
	DrainSec    float64      `json:"drain_sec"`
	SliceSec    float64      `json:"slice_sec"`
	Points      []SweepPoint `json:"points"`
	// Capacity is the largest measured load whose point was good, of the
	// points neither interrupted nor client-saturated; null when none was.
	Capacity *SweepCapacity `json:"capacity"`
	// Stop says why the search ended (one of the Stop* values).
	Stop string `json:"stop"`
	// Note explains Stop in words.
	Note string `json:"note,omitempty"`
}

// Sweep modes.
const (
	SweepConcurrency = "concurrency"
	SweepRate        = "rate"
)

// Why a sweep's search ended.
const (
	// StopBracketed: a good and a bad point lie within the search's resolution.
	StopBracketed = "bracketed"
	// StopMaxPoints: --max-points points were measured.
	StopMaxPoints = "max_points"
	// StopSaturated: the client lagged its sends, so higher loads would
	// measure the client, not the endpoint.
	StopSaturated = "client_saturated"
	// StopNoneGood: the lowest load already missed the SLOs.
	StopNoneGood = "none_good"
	// StopList: every load of the list was measured.
	StopList = "list"
	// StopInterrupted: the user's Ctrl-C.
	StopInterrupted = "interrupted"
)

// SweepPoint is one steady-state window. The embedded PhaseResult holds every
// run metric, computed over the requests that started inside the window, with
// wall_sec the window's length (so out_tput is tokens of those requests per
// second of window).
type SweepPoint struct {
	// Point numbers the points in the order they ran, from 1.
	Point int `json:"point"`
	// Load is the point's x: its concurrency, or its request rate per second.
	Load float64 `json:"load"`
	PhaseResult
	// Started counts requests started in the window; Unfinished those still
	// running when the drain ran out (each a miss).
	Started    int `json:"started"`
	Unfinished int `json:"unfinished"`
	// RequestsPerSec is completed measured requests per second of window.
	RequestsPerSec float64 `json:"requests_per_sec"`
	// OutTputPerUser is the median of completed requests' output tokens per
	// second after their first token, 1 / tpot: the speed one user sees.
	OutTputPerUser *float64 `json:"out_tput_per_user"`
	// WindowSLOs says whether every window SLO (ttft_p99 < 2s, …) held;
	// true when there is none.
	WindowSLOs bool `json:"window_slos_held"`
	// Good: attainment ≥ the target and every window SLO held.
	Good bool `json:"good"`
	// SendLagP99 is the p99 of the measured requests' send lags, seconds
	// (closed loop: from one request's end to its successor's t0).
	SendLagP99 float64 `json:"send_lag_p99"`
	// Saturated: SendLagP99 passed SaturationLag, so the client, not the
	// endpoint, may have set the pace.
	Saturated bool `json:"client_saturated"`
	// Slices cut the window into equal parts.
	Slices []SweepSlice `json:"slices"`
}

// SweepSlice is one part of a point's window: the output tokens streamed in
// it per second (by every request of the point, measured or not: the load the
// server carried then) and the latency percentiles of the requests that
// started in it.
type SweepSlice struct {
	StartSec float64  `json:"start_sec"`
	EndSec   float64  `json:"end_sec"`
	Started  int      `json:"started"`
	OutTput  float64  `json:"out_tput"`
	TTFTMed  *float64 `json:"ttft_med"`
	TTFTP99  *float64 `json:"ttft_p99"`
	TPOTMed  *float64 `json:"tpot_med"`
	TPOTP99  *float64 `json:"tpot_p99"`
}

// SweepCapacity is a sweep's answer: the largest measured good load, its
// figures, and the bracket the true capacity lies in.
type SweepCapacity struct {
	Point          int      `json:"point"`
	Load           float64  `json:"load"`
	OutTput        float64  `json:"out_tput"`
	Goodput        float64  `json:"goodput"`
	OutTputPerUser *float64 `json:"out_tput_per_user"`
	// Above is the smallest measured load above Load that was bad (of the
	// same points): the capacity lies in [Load, Above). Null when no higher
	// load was bad (a lower bound only).
	Above *float64 `json:"above"`
}
