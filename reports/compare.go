package reports

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/gonum/stat"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/paired"
	"github.com/glmbench/glmbench/reports/schema"
)

// CompareSchema is the value of Comparison.Schema.
const CompareSchema = "glmbench/compare/v1"

// Comparison is the side-by-side view of several reports: one row per phase
// (then per eval, then conformance), one column per label. Reports of the
// same label are merged: figures are means over their runs, counts are sums.
// Labels and rows keep the order in which the inputs first name them.
type Comparison struct {
	Schema  string     `json:"schema"`
	Columns []Column   `json:"columns"`
	Phases  []PhaseRow `json:"phases"`
	Evals   []EvalRow  `json:"evals,omitempty"`
	// Conformance has one cell per column (null where a column ran no
	// checks), or is empty when no column did.
	Conformance []*ConformanceCell `json:"conformance,omitempty"`
}

// Column is one label and the reports merged into it.
type Column struct {
	Label string `json:"label"`
	// Sources are the paths the reports were read from, one per run.
	Sources  []string `json:"sources"`
	Endpoint string   `json:"endpoint,omitempty"`
	Model    string   `json:"model,omitempty"`
	// API is the route the load went to (schema.Options.API) when it was
	// not chat: a completions run's prompts carry no chat template, so its
	// prompt tokens mean other text than a chat run's.
	API string `json:"api,omitempty"`
	// ExtraBody is the fields --extra-body added to the load's requests
	// (schema.Options.ExtraBody), when it added any.
	ExtraBody json.RawMessage `json:"extra_body,omitempty"`
	Legacy    bool            `json:"legacy,omitempty"`
}

// PhaseRow is one phase across the columns; a cell is null where a column
// did not run the phase.
type PhaseRow struct {
	Phase string       `json:"phase"`
	Cells []*PhaseCell `json:"cells"`
}

// PhaseCell is one phase of one label, merged over its runs. Rates are
// tokens/s, times seconds; a null time is an empty sample in every run.
type PhaseCell struct {
	Runs      int `json:"runs"`
	BatchSize int `json:"batch_size"`
	InputLen  int `json:"input_len"`
	OutputLen int `json:"output_len"`
	// Asked is batch_size summed over the runs.
	Asked     int                  `json:"asked"`
	Completed int                  `json:"completed"`
	Errors    int                  `json:"errors"`
	ByClass   map[schema.Class]int `json:"errors_by_class"`
	Cancelled int                  `json:"cancelled_at_cap"`
	NotSent   int                  `json:"not_sent"`
	Short     int                  `json:"short_output"`
	ErrorRate float64              `json:"error_rate"`
	// Status is complete only when every run's phase was.
	Status  string   `json:"status"`
	OutTput float64  `json:"out_tput"`
	InTput  *float64 `json:"in_tput"`
	// InTputLacking counts the runs whose in_tput is null (a stream without
	// usage counted no prompt), left out of InTput's mean.
	InTputLacking int      `json:"in_tput_lacking,omitempty"`
	TTFTMed       *float64 `json:"ttft_med"`
	TTFTP99       *float64 `json:"ttft_p99"`
	TPOTMed       *float64 `json:"tpot_med"`
	TPOTP99       *float64 `json:"tpot_p99"`
	// OutTputChange is the change of out_tput in percent against the first
	// column that ran this phase with the same shape; null in that column.
	OutTputChange *float64 `json:"out_tput_change_pct"`
	// Cache is the prefix cache of the phase's runs; absent when none has a
	// hit rate, an expected one or a workload kind (a fixed phase against a
	// server that reports no cached tokens).
	Cache *CacheCell `json:"cache,omitempty"`
	// Server is the server's own account of the phase's runs; absent when
	// no run's phase has a server block (its metrics were not scraped).
	Server *ServerCell `json:"server,omitempty"`
}

// ServerCell is one phase's server-side figures of one label, merged over
// its runs: means over the runs whose server exposes each, null where none
// does (never 0).
type ServerCell struct {
	// Source is the runs' server (the last run's, should they differ).
	Source string `json:"source,omitempty"`
	// TTFTP50 is the server's TTFT p50 in seconds.
	TTFTP50 *float64 `json:"ttft_p50"`
	// AcceptLength is the speculative decoder's mean accept length.
	AcceptLength *float64 `json:"accept_length"`
	// Runs counts the runs with a server block.
	Runs int `json:"runs"`
}

// CacheCell is one phase's prefix cache of one label, merged over its runs.
type CacheCell struct {
	// Workload is the runs' workload kind (the last run's, should they differ).
	Workload string `json:"workload,omitempty"`
	// HitRate is the mean hit rate of the runs whose server reported cached
	// tokens; null when none did, which is not a hit rate of 0.
	HitRate *float64 `json:"hit_rate"`
	// ExpectedHitRate is the mean expected hit rate of the runs that have
	// one: what the workload was built to let a cache serve.
	ExpectedHitRate *float64 `json:"expected_hit_rate"`
	// Reported counts the runs with a hit rate, of Runs with a cache block.
	Reported int `json:"reported_runs"`
	Runs     int `json:"runs"`
}

// EvalRow is one eval across the columns.
type EvalRow struct {
	Eval  string      `json:"eval"`
	Cells []*EvalCell `json:"cells"`
}

// EvalCell is one eval of one label. Metrics are means over the runs that
// gave a score; Failure is the last failure's kind, set when a run gave none.
type EvalCell struct {
	Runs    int                `json:"runs"`
	Scored  int                `json:"scored"`
	Status  string             `json:"status"`
	N       int                `json:"n"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Failure string             `json:"failure,omitempty"`
	// Method is how the scored runs got their metrics (EvalResult.Method:
	// echo, chat-greedy, …); runs of several methods name them all, joined
	// by " + ", in the order first met.
	Method string `json:"method,omitempty"`
	// MethodNote is set when this cell's metrics are not comparable with the
	// row's: its runs mix methods, or its method is not that of the row's
	// first scored cell. An accuracy by greedy chat answers beside one by
	// echo log-likelihoods is not a change of quality, so the row says so
	// instead of setting them side by side in silence.
	MethodNote string `json:"method_note,omitempty"`
	// Paired is this cell's change against the row's first scored cell,
	// item by item (PairEval), when both columns have items of this eval
	// (evals.jsonl) from one run each and the same method; absent in that
	// first cell, and wherever the comparison cannot pair.
	Paired *PairedDelta `json:"paired,omitempty"`
}

// PairedDelta is one eval of two runs compared item by item over the
// items both scored (their IDs): the mean difference of their scores
// (this − reference) with its paired bootstrap 95% interval
// (paired.Bootstrap), and for accuracies McNemar's test.
type PairedDelta struct {
	// Metric is the metric the items' scores make (PairedMetrics).
	Metric string `json:"metric"`
	// Items is how many items both runs scored.
	Items int `json:"items"`
	// Delta, Lo and Hi are the mean score difference and its interval: for
	// an accuracy in fractions (0.1 is ten points); for a perplexity
	// (Ratio) the ratio of perplexities, exp of the mean per-item log-ppl
	// difference, and its interval.
	Delta float64 `json:"delta"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Ratio bool    `json:"ratio,omitempty"`
	// Reference is the reference run's mean score over the paired items.
	Reference float64 `json:"reference"`
	// McNemar is the two-sided p-value of McNemar's test (paired.McNemar)
	// when every paired item says right or wrong on both sides; OnlyRef
	// counts the items right only in the reference, OnlyThis those right
	// only in this run.
	McNemar  *float64 `json:"mcnemar_p,omitempty"`
	OnlyRef  int      `json:"only_reference_right,omitempty"`
	OnlyThis int      `json:"only_this_right,omitempty"`
}

// PairedMetrics names the metric each eval's items make: the mean of
// their scores is the accuracy (acc, exact_match), or each score is a
// document's log-ppl, so their mean difference is the log of a ppl ratio.
var PairedMetrics = map[string]string{"ppl": "ppl", "long-ppl": "ppl", "mmlu": "acc", "triviaqa": "exact_match"}

// pairedLevel is the paired interval's coverage.
const pairedLevel = 0.95

// PairEval compares eval's items of ref and cur by ID, over the items
// both have; nil when none pairs, or the eval has no PairedMetrics entry.
// A perplexity item's score is its log-ppl, nll/tokens (recomputed from
// them where given). The bootstrap is seeded by the eval's name, so a
// comparison is the same every time.
func PairEval(eval string, ref, cur []schema.EvalItem) *PairedDelta {
	metric, ok := PairedMetrics[eval]
	if !ok {
		return nil
	}
	byID := map[string]*schema.EvalItem{}
	for i := range ref {
		if ref[i].Eval == eval {
			byID[ref[i].ID] = &ref[i]
		}
	}
	var diffs []float64
	pd := &PairedDelta{Metric: metric, Ratio: metric == "ppl"}
	binary := true
	var refSum float64
	for i := range cur {
		b := &cur[i]
		a, ok := byID[b.ID]
		if b.Eval != eval || !ok {
			continue
		}
		sa, sb := itemScore(a), itemScore(b)
		diffs = append(diffs, sb-sa)
		refSum += sa
		if a.Correct == nil || b.Correct == nil {
			binary = false
			continue
		}
		switch {
		case *a.Correct && !*b.Correct:
			pd.OnlyRef++
		case *b.Correct && !*a.Correct:
			pd.OnlyThis++
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(eval))
	iv := paired.Bootstrap(diffs, pairedLevel, paired.DefaultResamples, h.Sum64())
	pd.Items, pd.Delta, pd.Lo, pd.Hi = iv.N, iv.Mean, iv.Lo, iv.Hi
	pd.Reference = refSum / float64(len(diffs))
	if pd.Ratio {
		pd.Delta, pd.Lo, pd.Hi = math.Exp(iv.Mean), math.Exp(iv.Lo), math.Exp(iv.Hi)
		pd.OnlyRef, pd.OnlyThis = 0, 0
	} else if binary {
		p := paired.McNemar(pd.OnlyRef, pd.OnlyThis)
		pd.McNemar = &p
	} else {
		pd.OnlyRef, pd.OnlyThis = 0, 0
	}
	return pd
}

// itemScore is an item's score: a perplexity item's log-ppl from its nll
// and tokens, else its Score.
func itemScore(it *schema.EvalItem) float64 {
	if it.NLL != nil && it.Tokens > 0 {
		return *it.NLL / float64(it.Tokens)
	}
	return it.Score
}

// ChangePct is the paired change as a relative change of the metric in
// percent, with its interval, as a relative threshold reads it: a ppl
// ratio r is (r − 1)·100; an accuracy's difference d is d / Reference ·
// 100 (the reference's mean taken as fixed). ok is false where the
// reference's mean is 0, from which no relative change is made.
func (p *PairedDelta) ChangePct() (mean, lo, hi float64, ok bool) {
	if p.Ratio {
		return (p.Delta - 1) * 100, (p.Lo - 1) * 100, (p.Hi - 1) * 100, true
	}
	if p.Reference == 0 {
		return 0, 0, 0, false
	}
	r := 100 / math.Abs(p.Reference)
	return p.Delta * r, p.Lo * r, p.Hi * r, true
}

// OneRunItems is the one list of runs (each run's eval items, as ItemsOf
// gives them) that has items of eval, else nil: none has, or several do (a
// label's runs are not pooled item by item).
func OneRunItems(eval string, runs [][]schema.EvalItem) []schema.EvalItem {
	var out []schema.EvalItem
	for _, items := range runs {
		if !slices.ContainsFunc(items, func(it schema.EvalItem) bool { return it.Eval == eval }) {
			continue
		}
		if out != nil {
			return nil
		}
		out = items
	}
	return out
}

// ConformanceCell counts one label's conformance checks, merged by id: a
// check fails if any run failed it, passes if any run passed it.
type ConformanceCell struct {
	Pass   int      `json:"pass"`
	Fail   int      `json:"fail"`
	Skip   int      `json:"skip"`
	Failed []string `json:"failed,omitempty"`
}

// Compare builds the side-by-side view of ins. It fails (bad input) when two
// reports of one label ran a phase with different shapes, since merging them
// would mean nothing.
func Compare(ins []*Input) (*Comparison, error) {
	c := &Comparison{Schema: CompareSchema, Columns: []Column{}, Phases: []PhaseRow{}}
	col := map[string]int{}
	var runs [][]*Input
	for _, in := range ins {
		l := in.Report.Label
		i, ok := col[l]
		if !ok {
			i = len(c.Columns)
			col[l] = i
			c.Columns = append(c.Columns, Column{Label: l, Endpoint: in.Report.Endpoint.BaseURL, Model: in.Report.Endpoint.Model})
			runs = append(runs, nil)
		}
		if err := sameAPI(&c.Columns[i], runs[i], in); err != nil {
			return nil, err
		}
		c.Columns[i].Sources = append(c.Columns[i].Sources, in.Path)
		c.Columns[i].Legacy = c.Columns[i].Legacy || in.Legacy
		runs[i] = append(runs[i], in)
	}
	var phases, evals []string
	anyChecks := false
	for _, in := range ins {
		for _, ph := range in.Report.Phases {
			if !slices.Contains(phases, ph.Phase) {
				phases = append(phases, ph.Phase)
			}
		}
		for _, e := range in.Report.Evals {
			if !slices.Contains(evals, e.Name) {
				evals = append(evals, e.Name)
			}
		}
		anyChecks = anyChecks || len(in.Report.Conformance) > 0
	}
	for _, name := range phases {
		row := PhaseRow{Phase: name, Cells: make([]*PhaseCell, len(c.Columns))}
		var ref *PhaseCell
		for i, rs := range runs {
			cell, err := mergePhase(c.Columns[i].Label, name, rs)
			if err != nil {
				return nil, err
			}
			row.Cells[i] = cell
			switch {
			case cell == nil:
			case ref == nil:
				ref = cell
			case cell.shape() == ref.shape() && ref.OutTput > 0:
				ch := (cell.OutTput - ref.OutTput) / ref.OutTput * 100
				cell.OutTputChange = &ch
			}
		}
		c.Phases = append(c.Phases, row)
	}
	for _, name := range evals {
		row := EvalRow{Eval: name, Cells: make([]*EvalCell, len(c.Columns))}
		var ref *EvalCell
		refLabel := ""
		var refItems []schema.EvalItem
		for i, rs := range runs {
			cell := mergeEval(name, rs)
			row.Cells[i] = cell
			switch {
			case cell == nil || cell.Scored == 0:
			case strings.Contains(cell.Method, methodJoin):
				cell.MethodNote = "runs by different methods (" + cell.Method + "): their mean is not comparable"
			case ref == nil:
				ref, refLabel = cell, c.Columns[i].Label
				refItems = OneRunItems(name, ItemsOf(rs))
			case cell.Method != ref.Method:
				cell.MethodNote = fmt.Sprintf("by %s, not %s as %s: not comparable", MethodName(cell.Method), MethodName(ref.Method), refLabel)
			case refItems != nil:
				if items := OneRunItems(name, ItemsOf(rs)); items != nil {
					cell.Paired = PairEval(name, refItems, items)
				}
			}
		}
		c.Evals = append(c.Evals, row)
	}
	if anyChecks {
		c.Conformance = make([]*ConformanceCell, len(c.Columns))
		for i, rs := range runs {
			c.Conformance[i] = mergeChecks(rs)
		}
	}
	return c, nil
}

// loadAPI is the route a report's load went to, "" when it ran no phase
// (an eval or conformance report); a report written before options.api
// existed ran chat.
func loadAPI(r *schema.Report) string {
	if len(r.Phases) == 0 {
		return ""
	}
	return r.Options.APIName()
}

// sameAPI sets col.API from in's load (only when not chat) and
// col.ExtraBody from its load's or evals' requests, and refuses runs of one
// label whose loads went to different routes, or whose loads and evals
// carried different --extra-body fields: merging a chat run's phases with
// a completions run's would average other prompts, and an MMLU without
// thinking with one that thought would average other answers.
func sameAPI(col *Column, runs []*Input, in *Input) error {
	if sentExtra(in.Report) {
		extra := in.Report.Options.Extra()
		for _, run := range runs {
			if other := run.Report.Options.Extra(); sentExtra(run.Report) && other != extra {
				return badinput.Errorf("label %s: the requests carried %s in %s but %s in %s (--extra-body); reports of one label are merged, so they must share one (run one with another --label)",
					col.Label, extraBody(other, extra), run.Path, extraBody(extra, other), in.Path)
			}
		}
		if extra != "" {
			col.ExtraBody = json.RawMessage(extra)
		}
	}
	api := loadAPI(in.Report)
	if api == "" {
		return nil
	}
	for _, run := range runs {
		if other := loadAPI(run.Report); other != "" && other != api {
			return badinput.Errorf("label %s: the load went to the %s API in %s but to the %s API in %s (--api); reports of one label are merged, so they must share one (run one with another --label)",
				col.Label, other, run.Path, api, in.Path)
		}
	}
	if api != "chat" {
		col.API = api
	}
	return nil
}

// sentExtra reports whether r's options.extra_body speaks of requests it
// holds: a load's, evals' or eval compare's (conformance sends none of it).
func sentExtra(r *schema.Report) bool {
	return len(r.Phases) > 0 || len(r.Evals) > 0 || r.Equivalence != nil
}

// extraBody names the fields --extra-body added, for a message that sets
// them against other's (ExtraBodyShown; "" for none).
func extraBody(extra, other string) string {
	if extra == "" {
		return "no extra body"
	}
	return "extra body " + ExtraBodyShown(extra, other)
}

// extraBodyWidth is how many bytes of an extra body a message shows, and
// extraBodyLead how many of them come before the first byte where it
// differs from the other when that lies past the first extraBodyWidth.
const extraBodyWidth, extraBodyLead = 120, 40

// ExtraBodyShown is extra, an extra body in one line
// (schema.Options.Extra), as a one-line message shows it against other
// ("" when none): whole up to extraBodyWidth bytes, else cut at a character
// to that many, from a little before the first byte where the two differ
// when the head they share is longer, so two long bodies that differ only
// at their end never read alike.
func ExtraBodyShown(extra, other string) string {
	if len(extra) <= extraBodyWidth {
		return extra
	}
	d := 0
	for d < len(extra) && d < len(other) && extra[d] == other[d] {
		d++
	}
	if d < extraBodyWidth-extraBodyLead {
		return text.Clip(extra, extraBodyWidth, "…")
	}
	start := d - extraBodyLead
	for start > 0 && !utf8.RuneStart(extra[start]) {
		start--
	}
	return "…" + text.Clip(extra[start:], extraBodyWidth, "…")
}

func (p *PhaseCell) shape() [3]int { return [3]int{p.BatchSize, p.InputLen, p.OutputLen} }

func mergePhase(label, name string, runs []*Input) (*PhaseCell, error) {
	var c *PhaseCell
	var src string
	var out []float64
	var in []*float64
	var ttftMed, ttftP99, tpotMed, tpotP99 []*float64
	var hit, expected []*float64
	cache := &CacheCell{}
	telling := false
	var server *ServerCell
	var srvTTFT, srvAccept []*float64
	for _, run := range runs {
		ph := FindPhase(run.Report, name)
		if ph == nil {
			continue
		}
		if c == nil {
			c = &PhaseCell{BatchSize: ph.BatchSize, InputLen: ph.InputLen, OutputLen: ph.OutputLen,
				ByClass: map[schema.Class]int{}, Status: schema.StatusComplete}
			src = run.Path
		} else if Shape(ph) != c.shape() {
			return nil, badinput.Errorf("label %s: phase %s is %s in %s but %s in %s; reports of one label are merged, so their phases must have one shape",
				label, name, ShapeString(c.shape()), src, ShapeString(Shape(ph)), run.Path)
		}
		c.Runs++
		c.Asked += ph.BatchSize
		c.Completed += ph.Completed
		c.Errors += ph.Errors
		for k, v := range ph.ByClass {
			c.ByClass[k] += v
		}
		c.Cancelled += ph.Cancelled
		c.NotSent += ph.NotSent
		c.Short += ph.Short
		if ph.Status != "" && ph.Status != schema.StatusComplete {
			c.Status = ph.Status
		}
		out, in = append(out, ph.OutTput), append(in, ph.InTput)
		if ph.InTput == nil {
			c.InTputLacking++
		}
		ttftMed, ttftP99 = append(ttftMed, ph.TTFTMed), append(ttftP99, ph.TTFTP99)
		tpotMed, tpotP99 = append(tpotMed, ph.TPOTMed), append(tpotP99, ph.TPOTP99)
		if ph.Workload != "" {
			cache.Workload, telling = ph.Workload, true
		}
		if pc := ph.Cache; pc != nil {
			cache.Runs++
			if pc.HitRate != nil {
				cache.Reported++
			}
			hit, expected = append(hit, pc.HitRate), append(expected, pc.ExpectedHitRate)
			telling = telling || pc.HitRate != nil || pc.ExpectedHitRate != nil
		}
		if ps := ph.Server; ps != nil {
			if server == nil {
				server = &ServerCell{}
			}
			server.Runs++
			if ps.Source != "" {
				server.Source = ps.Source
			}
			srvTTFT, srvAccept = append(srvTTFT, ps.TTFTP50), append(srvAccept, ps.AcceptLength)
		}
	}
	if c == nil {
		return nil, nil
	}
	if c.Asked > 0 {
		c.ErrorRate = float64(c.Errors) / float64(c.Asked)
	}
	c.OutTput, c.InTput = stat.Mean(out, nil), meanOpt(in)
	c.TTFTMed, c.TTFTP99 = meanOpt(ttftMed), meanOpt(ttftP99)
	c.TPOTMed, c.TPOTP99 = meanOpt(tpotMed), meanOpt(tpotP99)
	if telling {
		cache.HitRate, cache.ExpectedHitRate = meanOpt(hit), meanOpt(expected)
		c.Cache = cache
	}
	if server != nil {
		server.TTFTP50, server.AcceptLength = meanOpt(srvTTFT), meanOpt(srvAccept)
		c.Server = server
	}
	return c, nil
}

func mergeEval(name string, runs []*Input) *EvalCell {
	var c *EvalCell
	sums := map[string][]float64{}
	for _, run := range runs {
		e := FindEval(run.Report, name)
		if e == nil {
			continue
		}
		if c == nil {
			c = &EvalCell{}
		}
		c.Runs++
		if len(e.Metrics) > 0 {
			if c.Scored == 0 {
				c.Method = e.Method
			} else if !slices.Contains(strings.Split(c.Method, methodJoin), e.Method) {
				c.Method += methodJoin + e.Method
			}
			c.Scored++
			c.N = e.N
			c.Status = e.Status
			for k, v := range e.Metrics {
				sums[k] = append(sums[k], v)
			}
			continue
		}
		if c.Scored == 0 {
			c.Status = e.Status
		}
		c.Failure = failureKind(e)
	}
	if c != nil && len(sums) > 0 {
		c.Metrics = map[string]float64{}
		for k, vs := range sums {
			c.Metrics[k] = stat.Mean(vs, nil)
		}
	}
	return c
}

// methodJoin joins the methods of runs that differ.
const methodJoin = " + "

// MethodName is a method as a note says it: an empty one (a report that
// does not say) is "no stated method".
func MethodName(m string) string {
	if m == "" {
		return "no stated method"
	}
	return m
}

// failureKind says why an eval gave no score, in a few words.
func failureKind(e *schema.EvalResult) string {
	if e.Failure == nil {
		if e.Status == "" {
			return "no score"
		}
		return e.Status
	}
	return e.Failure.Short()
}

func mergeChecks(runs []*Input) *ConformanceCell {
	status := map[string]string{}
	var ids []string
	for _, run := range runs {
		for _, ch := range run.Report.Conformance {
			old, seen := status[ch.ID]
			if !seen {
				ids = append(ids, ch.ID)
			}
			switch {
			case old == "fail":
			case ch.Status == "fail", ch.Status == "pass", !seen:
				status[ch.ID] = ch.Status
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	c := &ConformanceCell{}
	for _, id := range ids {
		switch status[id] {
		case "pass":
			c.Pass++
		case "fail":
			c.Fail++
			c.Failed = append(c.Failed, id)
		default:
			c.Skip++
		}
	}
	return c
}

// meanOpt is the mean of the values present, or nil when none is.
func meanOpt(xs []*float64) *float64 {
	var vs []float64
	for _, x := range xs {
		if x != nil {
			vs = append(vs, *x)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	m := stat.Mean(vs, nil)
	return &m
}
