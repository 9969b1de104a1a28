// Package reports writes and reads glmbench's outputs: report.json, the
// per-request records of requests.jsonl and the Markdown report. Everything
// here is a pure function of its inputs; nothing makes a request.
package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// File names inside a run's output folder.
const (
	ReportJSON   = "report.json"
	ReportMD     = "report.md"
	RecordsJSONL = "requests.jsonl"
	// MetricsJSONL holds the scrapes of the server's metrics, one
	// schema.MetricsSample a line, beside requests.jsonl.
	MetricsJSONL = "metrics.jsonl"
	// EvalsJSONL holds the evals' items as scored, one schema.EvalItem a
	// line, so that two reports' evals pair up item by item.
	EvalsJSONL = "evals.jsonl"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *schema.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteRecords writes one JSON object per record.
func WriteRecords(w io.Writer, recs []schema.Record) error {
	return writeJSONL(w, len(recs), func(enc *json.Encoder, i int) error { return enc.Encode(&recs[i]) })
}

// ReadRecords reads requests.jsonl.
func ReadRecords(r io.Reader) ([]schema.Record, error) {
	return readJSONL[schema.Record](r, "record", nil)
}

// writeJSONL writes n JSON objects, one a line, through a large buffer:
// encode writes the i-th (0-based) with enc, which leaves HTML characters
// unescaped.
func writeJSONL(w io.Writer, n int, encode func(enc *json.Encoder, i int) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range n {
		if err := encode(enc, i); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readJSONL reads JSON values of type T, streamed, until the input ends. A
// value that does not decode is an error naming it "<what> N", N counting
// from 1; check, when not nil, sees each value with its N before it is kept,
// and its error ends the read.
func readJSONL[T any](r io.Reader, what string, check func(line int, v *T) error) ([]T, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	var out []T
	for line := 1; ; line++ {
		var v T
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, line, err)
		}
		if check != nil {
			if err := check(line, &v); err != nil {
				return nil, err
			}
		}
		out = append(out, v)
	}
}

// WriteMetrics writes one JSON object per scrape. A value that is not a
// finite number (a gauge of NaN: the server had none to show) is left out,
// as JSON has no NaN: absent is what the reader takes for "not exposed".
func WriteMetrics(w io.Writer, samples []schema.MetricsSample) error {
	return writeJSONL(w, len(samples), func(enc *json.Encoder, i int) error {
		s := samples[i]
		for _, v := range s.Values {
			if !isFinite(v) {
				s.Values = finite(s.Values)
				break
			}
		}
		if err := enc.Encode(&s); err != nil {
			return fmt.Errorf("scrape %d: %w", i+1, err)
		}
		return nil
	})
}

// finite is a copy of vals without its values that are not finite.
func finite(vals map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(vals))
	for k, v := range vals {
		if isFinite(v) {
			out[k] = v
		}
	}
	return out
}

// ReadMetrics reads metrics.jsonl, streamed. A line that is not a scrape
// is an error naming its line (bad input to the caller, as ReadRecords').
func ReadMetrics(r io.Reader) ([]schema.MetricsSample, error) {
	return readJSONL[schema.MetricsSample](r, "scrape", nil)
}

// WriteEvalItems writes one JSON object per item. An item whose score or
// nll is not a finite number is an error naming it: JSON has no NaN.
func WriteEvalItems(w io.Writer, items []schema.EvalItem) error {
	return writeJSONL(w, len(items), func(enc *json.Encoder, i int) error {
		if err := enc.Encode(&items[i]); err != nil {
			return fmt.Errorf("%s item %s: %w", items[i].Eval, items[i].ID, err)
		}
		return nil
	})
}

// ReadEvalItems reads evals.jsonl, streamed. A line that is not an item,
// that names no eval or no id, or whose eval and id an earlier line has
// (the pairing would be ambiguous) is an error naming its line (bad input
// to the caller, as ReadRecords').
func ReadEvalItems(r io.Reader) ([]schema.EvalItem, error) {
	seen := map[[2]string]int{}
	return readJSONL(r, "item", func(line int, it *schema.EvalItem) error {
		if it.Eval == "" || it.ID == "" {
			return fmt.Errorf("item %d: no eval or no id", line)
		}
		k := [2]string{it.Eval, it.ID}
		if first, dup := seen[k]; dup {
			return fmt.Errorf("item %d: %s id %q again (first at item %d)", line, it.Eval, it.ID, first)
		}
		seen[k] = line
		return nil
	})
}

// MergeEvalItemsFile puts items into dir's evals.jsonl the way MergeEvals
// puts results into the report: the lines of every eval in ran (the evals
// that ran, whether or not they gave items) are replaced by items, those
// of other evals stay, in their order, before the new ones. The file is
// rewritten through a temporary file, like WriteDir's; dir is created. A
// file already there that cannot be read as items is left alone, and its
// error is bad input (badinput.Error).
func MergeEvalItemsFile(dir string, ran []string, items []schema.EvalItem) error {
	path := filepath.Join(dir, EvalsJSONL)
	var keep []schema.EvalItem
	switch f, err := os.Open(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		old, err := ReadEvalItems(f)
		f.Close()
		if err != nil {
			return badinput.Errorf("%s: %v", path, err)
		}
		for _, it := range old {
			if !slices.Contains(ran, it.Eval) {
				keep = append(keep, it)
			}
		}
	}
	if len(keep) == 0 && len(items) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeAtomic(dir, EvalsJSONL, func(w io.Writer) error { return WriteEvalItems(w, append(keep, items...)) })
}

// WriteMetricsFile writes samples to dir's metrics.jsonl, creating dir,
// through a temporary file renamed into place like WriteDir's files.
func WriteMetricsFile(dir string, samples []schema.MetricsSample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeAtomic(dir, MetricsJSONL, func(w io.Writer) error { return WriteMetrics(w, samples) })
}

// WriteDir writes report.json, report.md and requests.jsonl into dir,
// creating it. Each file is written to a temporary name and renamed, so an
// interrupted write never leaves half a report.
func WriteDir(dir string, r *schema.Report, recs []schema.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fill func(io.Writer) error) error { return writeAtomic(dir, name, fill) }
	if err := write(RecordsJSONL, func(w io.Writer) error { return WriteRecords(w, recs) }); err != nil {
		return err
	}
	if err := write(ReportJSON, func(w io.Writer) error { return WriteJSON(w, r) }); err != nil {
		return err
	}
	return write(ReportMD, func(w io.Writer) error { return WriteMarkdown(w, r) })
}

// writeAtomic writes dir/name through a temporary file renamed into place,
// so an interrupted write never leaves half a file.
func writeAtomic(dir, name string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// WriteMarkdown renders one report: what was measured, a phase table, the
// prefix cache and prompt drift, the server side, the error classes as columns, the servers'
// error messages and the formulas.
func WriteMarkdown(w io.Writer, r *schema.Report) error {
	p := &printer{w: w}
	p.f("# glmbench report: %s\n\n", r.Label)
	target := r.Endpoint.BaseURL
	if r.Endpoint.Builtin {
		target += " (built-in engine)"
	}
	p.f("- endpoint: %s, model `%s`\n", target, r.Endpoint.Model)
	if len(r.Endpoint.Headers) > 0 {
		p.f("- extra headers (names only): %s\n", strings.Join(r.Endpoint.Headers, ", "))
	}
	if r.Endpoint.Insecure {
		p.f("- TLS: the certificate was **not** verified (--insecure)\n")
	} else if r.Endpoint.CACert != "" {
		p.f("- TLS: verified against %s beside the system's roots\n", codeSpan(r.Endpoint.CACert))
	}
	if r.Endpoint.ClientCert != "" {
		p.f("- TLS client certificate: %s\n", codeSpan(r.Endpoint.ClientCert))
	}
	if r.Nonce == "" { // evals or conformance alone: no load was run
		p.f("- run: %s → %s, %s %s\n", r.StartedAt.UTC().Format(time.RFC3339), r.FinishedAt.UTC().Format(time.RFC3339), r.Tool.Name, r.Tool.Version)
		p.extraBody(r.Options)
	} else {
		p.f("- run: %s → %s, nonce `%s`, %s %s\n", r.StartedAt.UTC().Format(time.RFC3339), r.FinishedAt.UTC().Format(time.RFC3339), r.Nonce, r.Tool.Name, r.Tool.Version)
		usage := ""
		if r.Options.NoStreamUsage {
			usage = ", no stream_options"
		}
		if r.Options.MaxCompletionTokens {
			usage += ", max_completion_tokens"
		}
		p.f("- api: %s; arrival: %s, ignore_eos %t%s, timeouts %s\n", apiRoute(r.Options), arrival(r.Options), r.Options.IgnoreEOS, usage, timeouts(r.Options.Timeouts))
		p.extraBody(r.Options)
		if r.Options.Profile {
			p.f("- profiled: the server's own profiler ran from before the first phase to after the last (--profile)\n")
		}
		sat := "no"
		if r.Client.Saturated {
			sat = "**yes**: the client lagged its plan by more than 10 ms, so its own load may show in the figures"
		}
		p.f("- client: %.2f CPU s, largest send lag %s, saturated: %s\n", r.Client.CPUSeconds, ms(r.Client.MaxSendLag), sat)
	}
	if r.Interrupted {
		p.f("- **interrupted**: phases after the interrupted one did not run\n")
	}
	p.phaseTables(r)
	p.sweepTables(r)
	p.sweepProxyLines(r)
	if len(r.Evals) > 0 {
		p.f("\n## Evals\n\n")
		p.evalTables(r.Evals)
	}
	p.agentTable(r)
	p.equivalenceTable(r)
	if len(r.Conformance) > 0 {
		p.f("\n## Conformance\n\n")
		p.checkTable(r.Conformance)
	}
	if len(r.Phases) > 0 || len(r.Sweeps) > 0 {
		p.f("\n## Formulas\n\n")
		for _, f := range schema.Formulas {
			p.f("- **%s** = %s\n", f.Metric, f.Formula)
		}
	}
	if cache, drift := hasCache(r); cache || drift {
		for _, f := range cacheFormulas {
			p.f("- **%s** = %s\n", f.Metric, f.Formula)
		}
	}
	if hasProxy(r) {
		for _, f := range proxyFormulas {
			p.f("- **%s** = %s\n", f.Metric, f.Formula)
		}
	}
	if hasServer(r) {
		for _, f := range serverFormulas {
			p.f("- **%s** = %s\n", f.Metric, f.Formula)
		}
	}
	if len(r.Sweeps) > 0 {
		for _, f := range sweepFormulas {
			p.f("- **%s** = %s\n", f.Metric, f.Formula)
		}
	}
	return p.err
}

// WriteSummary writes the phase and failure tables of r, for a terminal.
func WriteSummary(w io.Writer, r *schema.Report) error {
	p := &printer{w: w}
	p.phaseTables(r)
	p.sweepTables(r)
	p.sweepProxyLines(r)
	return p.err
}

// phaseTables renders the phase table, the SLOs, the prefix cache and the
// prompt drift, the server's own figures, the failures by class and the servers' messages.
func (p *printer) phaseTables(r *schema.Report) {
	if len(r.Phases) == 0 {
		return
	}
	p.f("\n## Phases\n\nTimes in seconds (ms where marked), throughput in tokens/s.\n\n")
	p.table([]string{"phase", "N/IN/OUT", "status", "completed", "wall s", "out tok/s", "in tok/s",
		"TTFT med", "TTFT p99", "TPOT med ms", "TPOT p99 ms", "ITL p99 ms", "lat med", "lat p99", "tok/event", "prompt tok"},
		func(add func(...string)) {
			for _, ph := range r.Phases {
				add(ph.Phase, fmt.Sprintf("%d/%d/%d", ph.BatchSize, ph.InputLen, ph.OutputLen), ph.Status,
					fmt.Sprintf("%d/%d", ph.Completed, ph.BatchSize), num(ph.WallSec, 2), num(ph.OutTput, 1), opt(ph.InTput, 1, 1),
					opt(ph.TTFTMed, 1, 3), opt(ph.TTFTP99, 1, 3), opt(ph.TPOTMed, 1e3, 2), opt(ph.TPOTP99, 1e3, 2), opt(ph.ITLP99, 1e3, 2),
					opt(ph.LatMed, 1, 3), opt(ph.LatP99, 1, 3), opt(ph.TokensPerEvent, 1, 2), opt(ph.PromptTokensMean, 1, 0))
			}
		})
	p.sloTable(r)
	p.cacheTables(r)
	p.serverTable(r)
	p.f("\n## Failures by class\n\nEvery failed request has exactly one class. Cancelled, not sent, short and long output are counted but are not errors.\n\n")
	head := []string{"phase", "error_rate"}
	for _, c := range schema.Classes {
		if c != schema.Unclassified {
			head = append(head, string(c))
		}
	}
	head = append(head, "cancelled_at_cap", "not_sent", "short_output", "long_output")
	p.table(head, func(add func(...string)) {
		for _, ph := range r.Phases {
			row := []string{ph.Phase, num(ph.ErrorRate, 4)}
			for _, c := range schema.Classes {
				if c != schema.Unclassified {
					row = append(row, strconv.Itoa(ph.ByClass[c]))
				}
			}
			row = append(row, strconv.Itoa(ph.Cancelled), strconv.Itoa(ph.NotSent), strconv.Itoa(ph.Short), strconv.Itoa(ph.Long))
			add(row...)
		}
	})
	var kinds []string
	for _, ph := range r.Phases {
		for _, k := range sortedKeys(ph.ErrorKinds) {
			kinds = append(kinds, fmt.Sprintf("- %s: %d × `%s`\n", ph.Phase, ph.ErrorKinds[k], strings.ReplaceAll(k, "`", "'")))
		}
	}
	if len(kinds) > 0 {
		p.f("\n### What the failures said\n\n%s", strings.Join(kinds, ""))
	}
	var unusable []string
	for _, ph := range r.Phases {
		if ph.MalformedEvents > 0 {
			unusable = append(unusable, fmt.Sprintf("- %s: %d malformed data lines (not one JSON object in valid UTF-8) in %s, skipped: they are not content events\n",
				ph.Phase, ph.MalformedEvents, Plural(ph.MalformedRequests, "request")))
		}
		if ph.BadUsage > 0 {
			unusable = append(unusable, fmt.Sprintf("- %s: %s with usage that is not a sound count (bad_usage in requests.jsonl): their n counts content events\n",
				ph.Phase, Plural(ph.BadUsage, "request")))
		}
	}
	if len(unusable) > 0 {
		p.f("\n### What the endpoint sent that glmbench could not use\n\n%s", strings.Join(unusable, ""))
	}
	p.proxyLines(r)
}

// proxyFormulas define the proxy's counts, printed when a phase has one.
var proxyFormulas = []schema.Formula{
	{Metric: "proxy_retried", Formula: "completed requests whose answer said a proxy retried the backend (proxy_retries > 0: x-litellm-attempted-retries + x-portkey-retry-attempt-count + (x-envoy-attempt-count − 1)): their lat and ttft include the retries"},
	{Metric: "proxy_fallback", Formula: "completed requests whose answer said a proxy fell back to another model or provider (proxy_fallbacks > 0: x-litellm-attempted-fallbacks + cf-aig-step): another one than asked for served them"},
	{Metric: "other_model", Formula: "completed requests whose stream named another model than asked (model_answered: neither it nor a dated or tagged version of it): a proxy's fallback, or a name the server serves the model under"},
	{Metric: "buffered", Formula: "completed requests whose content events arrived in blocks: 16 or more events, the last 100 ms or more after t0, and at least half of the reads that delivered them (distinct arrival times) 8 events or more each; their ttft is a proxy's buffer filling, their itl mostly 0"},
}

// hasProxy reports whether any phase or sweep point of r counts a proxy's
// retry or fallback, an answer as another model, or a buffered stream.
func hasProxy(r *schema.Report) bool {
	for i := range r.Phases {
		if proxyCounted(&r.Phases[i]) {
			return true
		}
	}
	for _, s := range r.Sweeps {
		for i := range s.Points {
			if proxyCounted(&s.Points[i].PhaseResult) {
				return true
			}
		}
	}
	return false
}

// proxyCounted reports whether ph counts any of proxyFormulas' metrics.
func proxyCounted(ph *schema.PhaseResult) bool {
	return ph.ProxyRetried > 0 || ph.ProxyFallback > 0 || ph.OtherModel > 0 || ph.Buffered > 0
}

// proxyLines says, for each phase, what proxyText finds in it; nothing
// when it finds nothing in any.
func (p *printer) proxyLines(r *schema.Report) {
	var lines []string
	for i := range r.Phases {
		lines = append(lines, proxyText(r.Phases[i].Phase, &r.Phases[i])...)
	}
	p.proxySection(lines)
}

// sweepProxyLines says the same for each sweep point, where a proxy's
// retries weigh most: its TTFT and TPOT percentiles decide the capacity.
func (p *printer) sweepProxyLines(r *schema.Report) {
	var lines []string
	for _, s := range r.Sweeps {
		for _, pt := range sortedPoints(&s) {
			lines = append(lines, proxyText(fmt.Sprintf("sweep %s at %s %s", s.Name, s.Mode, LoadString(pt.Load)), &pt.PhaseResult)...)
		}
	}
	p.proxySection(lines)
}

// proxyText is what a proxy did in ph, named name: a line for its
// fallbacks, one for its retries, one for a router's retries (the server
// block's), one for the answers as another model, then one for the streams
// it buffered, each when there are any.
func proxyText(name string, ph *schema.PhaseResult) []string {
	var lines []string
	if ph.ProxyFallback > 0 {
		lines = append(lines, fmt.Sprintf("- %s: %d of %d completed requests were answered by a fallback inside the proxy (proxy_fallback): another model or provider than the one asked for served them\n",
			name, ph.ProxyFallback, ph.Completed))
	}
	if ph.ProxyRetried > 0 {
		lines = append(lines, fmt.Sprintf("- %s: %d of %d completed requests were retried inside the proxy (proxy_retried): their latency includes the retries\n",
			name, ph.ProxyRetried, ph.Completed))
	}
	if ph.Server != nil && ph.Server.Retries != nil && *ph.Server.Retries > 0 {
		lines = append(lines, fmt.Sprintf("- %s: the router in front of the workers retried %g attempts inside (the server block's retries, from %s's counter): the retried requests' latency includes the failed attempts and the backoff\n",
			name, *ph.Server.Retries, ph.Server.Source))
	}
	if ph.OtherModel > 0 {
		lines = append(lines, fmt.Sprintf("- %s: %d of %d completed requests were answered as another model than asked (other_model; each record's model_answered names it)\n",
			name, ph.OtherModel, ph.Completed))
	}
	if ph.Buffered > 0 {
		lines = append(lines, fmt.Sprintf("- %s: %d of %d completed streams arrived buffered (buffered), in blocks of many events, not one by one: something between glmbench and the server buffers the stream, so their TTFT and ITL are its buffering, not the server's (nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream)\n",
			name, ph.Buffered, ph.Completed))
	}
	return lines
}

// proxySection writes lines under their heading; nothing when none.
func (p *printer) proxySection(lines []string) {
	if len(lines) > 0 {
		p.f("\n### What the proxy did\n\n%s", strings.Join(lines, ""))
	}
}

// printer remembers the first write error so rendering code stays linear.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// table renders a Markdown table through tablewriter.
func (p *printer) table(head []string, rows func(add func(...string))) {
	if p.err != nil {
		return
	}
	t := tablewriter.NewTable(p.w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
	)
	t.Header(anys(head)...)
	rows(func(cells ...string) {
		for i := range cells {
			cells[i] = MDCell(cells[i])
		}
		if err := t.Append(anys(cells)...); err != nil && p.err == nil {
			p.err = err
		}
	})
	if err := t.Render(); err != nil && p.err == nil {
		p.err = err
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// MDCell keeps a cell on one line and its pipes from splitting the row.
func MDCell(s string) string {
	s = text.OneLine(s)
	return strings.ReplaceAll(s, "|", `\|`)
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// opt prints v×scale, or "—" for a metric over an empty sample.
func opt(v *float64, scale float64, prec int) string {
	if v == nil {
		return "—"
	}
	return num(*v*scale, prec)
}

func ms(sec float64) string { return num(sec*1e3, 2) + " ms" }

// apiRoute names the route the run's load went to, with its path: a
// report without one (written before runs had --api) was a chat run.
func apiRoute(o schema.Options) string {
	if o.APIName() == "completions" {
		return "completions (POST /completions, no chat template)"
	}
	return "chat (POST /chat/completions)"
}

// extraBody prints report.md's line of the fields --extra-body added to the
// requests, when it added any.
func (p *printer) extraBody(o schema.Options) {
	if extra := o.Extra(); extra != "" {
		p.f("- extra body (--extra-body): %s\n", codeSpan(text.Clip(extra, 300, "…")))
	}
}

// codeSpan puts s in a Markdown code span, fenced by one backtick more
// than its longest run of them (CommonMark), so no text in s ends it.
func codeSpan(s string) string {
	run, longest := 0, 0
	for _, r := range s {
		if run++; r != '`' {
			run = 0
		}
		longest = max(longest, run)
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func arrival(o schema.Options) string {
	s := o.Arrival
	if o.RequestRate > 0 {
		s += fmt.Sprintf(" %.4g req/s", o.RequestRate)
	}
	if o.MaxConcurrency > 0 {
		s += fmt.Sprintf(", at most %d in flight", o.MaxConcurrency)
	}
	return s
}

func timeouts(t map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(t) {
		v := "off"
		if t[k] > 0 {
			v = (time.Duration(t[k] * float64(time.Second))).String()
		}
		parts = append(parts, k+" "+v)
	}
	return strings.Join(parts, ", ")
}

// WriteCompactTable writes a Markdown table without padding.
func WriteCompactTable(w io.Writer, head []string, rows [][]string) error {
	p := &printer{w: w}
	p.compactTable(head, rows)
	return p.err
}

// Plural is n and what, with an s unless n is 1: "1 run", "3 runs".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
