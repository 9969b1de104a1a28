package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// Comparison output formats.
const (
	FormatMarkdown = "md"
	FormatJSON     = "json"
	FormatText     = "text"
)

// Formats lists the formats WriteComparison takes.
var Formats = []string{FormatMarkdown, FormatJSON, FormatText}

// WriteComparison writes c in format (md, json or text).
func WriteComparison(w io.Writer, c *Comparison, format string) error {
	switch format {
	case FormatMarkdown:
		return WriteComparisonMarkdown(w, c)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(c)
	case FormatText:
		return WriteComparisonText(w, c)
	}
	return badinput.Errorf("unknown format %q (want md, json or text)", format)
}

// compareIntro says how to read the grid; Markdown and text share it.
const compareIntro = "Phases down, labels across. Each phase cell: output · input throughput in tokens/s " +
	"(in brackets, the change in output throughput against the first column), TTFT median · p99 in seconds, " +
	"TPOT median · p99 in milliseconds, requests completed of those asked, and the errors by class. " +
	"Reports of one label are merged: figures are means over the runs, counts are sums."

// WriteComparisonMarkdown renders c as Markdown: the sources, then one table
// with a row per phase, per eval and for conformance.
func WriteComparisonMarkdown(w io.Writer, c *Comparison) error {
	p := &printer{w: w}
	p.f("# glmbench comparison: %s\n\n%s\n\n", strings.Join(labels(c), " vs "), compareIntro)
	var sources [][]string
	for _, col := range c.Columns {
		row := []string{col.Label, strconv.Itoa(len(col.Sources)), columnEndpoint(col), orDash(col.Model), strings.Join(col.Sources, ", ")}
		for i := range row {
			row[i] = MDCell(row[i]) // an extra body's stop string "<|user|>" holds pipes
		}
		sources = append(sources, row)
	}
	p.compactTable([]string{"label", "runs", "endpoint", "model", "from"}, sources)
	p.f("\n")
	var rows [][]string
	for _, row := range gridRows(c) {
		cells := make([]string, len(row))
		for i, lines := range row {
			for j := range lines {
				lines[j] = MDCell(lines[j])
			}
			cells[i] = strings.Join(lines, "<br>")
		}
		cells[0] = "**" + strings.Replace(cells[0], "<br>", "**<br>", 1)
		if !strings.Contains(cells[0], "**<br>") {
			cells[0] += "**"
		}
		rows = append(rows, cells)
	}
	p.compactTable(gridHead(c), rows)
	return p.err
}

// compactTable writes a Markdown table without padding: the grid's cells
// hold several lines each, and padding every column to its widest cell
// would multiply the file's size for no change in how it renders.
func (p *printer) compactTable(head []string, rows [][]string) {
	line := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			if c == "" {
				c = " "
			}
			esc[i] = c
		}
		p.f("| %s |\n", strings.Join(esc, " | "))
	}
	line(head)
	p.f("|%s\n", strings.Repeat("---|", len(head)))
	for _, r := range rows {
		line(r)
	}
}

// WriteComparisonText renders c as a boxed text table for a terminal.
func WriteComparisonText(w io.Writer, c *Comparison) error {
	p := &printer{w: w}
	p.f("glmbench comparison: %s\n", strings.Join(labels(c), " vs "))
	for _, col := range c.Columns {
		p.f("  %s: %s, model %s, from %s\n", col.Label, columnEndpoint(col), orDash(col.Model), strings.Join(col.Sources, ", "))
	}
	if p.err != nil {
		return p.err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	t.Header(anys(gridHead(c))...)
	for _, row := range gridRows(c) {
		cells := make([]string, len(row))
		for i, lines := range row {
			cells[i] = strings.Join(lines, "\n")
		}
		if err := t.Append(anys(cells)...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s\n", compareIntro)
	return err
}

func labels(c *Comparison) []string {
	out := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		out[i] = col.Label
	}
	return out
}

func columnEndpoint(col Column) string {
	switch {
	case col.Legacy && col.Endpoint == "":
		return "older harness (imported)"
	case col.Endpoint == "":
		return "—"
	}
	var notes []string
	if col.API != "" {
		notes = append(notes, "api "+col.API)
	}
	if len(col.ExtraBody) > 0 {
		notes = append(notes, extraBody(string(col.ExtraBody), ""))
	}
	if len(notes) == 0 {
		return col.Endpoint
	}
	return col.Endpoint + " (" + strings.Join(notes, ", ") + ")"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func gridHead(c *Comparison) []string {
	head := []string{""}
	for _, col := range c.Columns {
		h := col.Label
		if n := len(col.Sources); n > 1 {
			h += fmt.Sprintf(" (%d runs)", n)
		}
		head = append(head, h)
	}
	return head
}

// gridRows lays c out as rows of cells, each cell a list of lines.
func gridRows(c *Comparison) [][][]string {
	var rows [][][]string
	for _, pr := range c.Phases {
		var shape [3]int
		for _, cell := range pr.Cells {
			if cell != nil {
				shape = cell.shape()
				break
			}
		}
		row := [][]string{{pr.Phase, ShapeString(shape)}}
		for _, cell := range pr.Cells {
			row = append(row, phaseLines(cell, shape))
		}
		rows = append(rows, row)
	}
	for _, er := range c.Evals {
		row := [][]string{{"eval " + er.Eval}}
		for _, cell := range er.Cells {
			row = append(row, evalLines(er.Eval, cell))
		}
		rows = append(rows, row)
	}
	if len(c.Conformance) > 0 {
		row := [][]string{{"conformance"}}
		for _, cell := range c.Conformance {
			row = append(row, checkLines(cell))
		}
		rows = append(rows, row)
	}
	return rows
}

func phaseLines(c *PhaseCell, rowShape [3]int) []string {
	if c == nil {
		return []string{"—"}
	}
	out := "out " + num(c.OutTput, 1)
	if c.OutTputChange != nil {
		out += " (" + SignedPct(*c.OutTputChange) + ")"
	}
	lines := []string{
		out + " · in " + opt(c.InTput, 1, 1) + " tok/s" + lackingText(c),
		"TTFT med " + opt(c.TTFTMed, 1, 3) + " · p99 " + opt(c.TTFTP99, 1, 3) + " s",
		"TPOT med " + opt(c.TPOTMed, 1e3, 2) + " · p99 " + opt(c.TPOTP99, 1e3, 2) + " ms",
	}
	if c.Cache != nil {
		lines = append(lines, cacheLine(c.Cache))
	}
	if c.Server != nil {
		lines = append(lines, serverLine(c.Server, c.Runs))
	}
	done := fmt.Sprintf("completed %d/%d", c.Completed, c.Asked)
	if c.Status != schema.StatusComplete {
		done += " (" + c.Status + ")"
	}
	lines = append(lines, done)
	var errs []string
	for _, cl := range schema.Classes {
		if n := c.ByClass[cl]; n > 0 {
			errs = append(errs, fmt.Sprintf("%s %d", cl, n))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, "no errors")
	}
	if c.Cancelled > 0 {
		errs = append(errs, fmt.Sprintf("cancelled_at_cap %d", c.Cancelled))
	}
	if c.NotSent > 0 {
		errs = append(errs, fmt.Sprintf("not_sent %d", c.NotSent))
	}
	lines = append(lines, strings.Join(errs, " · "))
	if c.shape() != rowShape {
		lines = append(lines, "shape "+ShapeString(c.shape())+", not comparable")
	}
	return lines
}

// cacheLine is a cell's prefix cache: its hit rate beside the expected one,
// "not reported" where no run's server reported cached tokens, and how many
// runs did when only some did.
func cacheLine(c *CacheCell) string {
	hit := NotReported
	if c.HitRate != nil {
		hit = pct(*c.HitRate)
	}
	exp := "—"
	if c.ExpectedHitRate != nil {
		exp = pct(*c.ExpectedHitRate)
	}
	line := "cache hit " + hit + " · expected " + exp
	if c.Reported > 0 && c.Reported < c.Runs {
		line += fmt.Sprintf(" (reported in %d of %d runs)", c.Reported, c.Runs)
	}
	if c.Workload != "" {
		line += " (" + c.Workload + ")"
	}
	return line
}

// serverLine is a cell's server side: the server's TTFT p50 in ms and its
// accept length, NotExposed for what it does not expose, its source, and
// how many runs were scraped when not all were.
func serverLine(s *ServerCell, runs int) string {
	line := "server TTFT p50 " + srv(s.TTFTP50, 1e3, 1) + " ms · accept " + srv(s.AcceptLength, 1, 2)
	if s.Source != "" {
		line += " (" + s.Source + ")"
	}
	if s.Runs < runs {
		line += fmt.Sprintf(" (scraped in %d of %d runs)", s.Runs, runs)
	}
	return line
}

// evalHeadline names the metrics an eval's cell shows; the JSON has them all.
var evalHeadline = map[string][]string{
	"ppl":      {"ppl"},
	"long-ppl": {"ppl", "worst_seg"},
	"mmlu":     {"acc"},
	"triviaqa": {"exact_match"},
}

func evalLines(name string, c *EvalCell) []string {
	if c == nil {
		return []string{"—"}
	}
	if c.Scored == 0 {
		return []string{c.Status + ": " + c.Failure}
	}
	keys, ok := evalHeadline[name]
	if !ok {
		keys = sortedKeys(c.Metrics)
	}
	var parts []string
	for _, k := range keys {
		if v, ok := c.Metrics[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.4g", k, v))
		}
	}
	lines := []string{strings.Join(parts, " · ") + fmt.Sprintf(" (n %d)", c.N)}
	if c.Scored < c.Runs {
		lines = append(lines, fmt.Sprintf("%d of %d runs gave no score: %s", c.Runs-c.Scored, c.Runs, c.Failure))
	}
	if c.MethodNote != "" {
		lines = append(lines, "⚠ "+c.MethodNote)
	}
	if c.Paired != nil {
		lines = append(lines, PairedText(c.Paired))
	}
	return lines
}

// PairedText says a paired change in one line: the number of items, the
// change with its 95% interval (an accuracy's in points, a ppl's as a
// ratio) and McNemar's p where it applies.
func PairedText(p *PairedDelta) string {
	if p.Ratio {
		return fmt.Sprintf("paired over %d items: %s ×%.4f, 95%% CI [×%.4f, ×%.4f]", p.Items, p.Metric, p.Delta, p.Lo, p.Hi)
	}
	s := fmt.Sprintf("paired over %d items: %s %s pts, 95%% CI [%s, %s]", p.Items, p.Metric,
		signedPts(p.Delta), signedPts(p.Lo), signedPts(p.Hi))
	if p.McNemar != nil {
		s += fmt.Sprintf(" · McNemar p %.3g (%d right only here, %d only in the first)", *p.McNemar, p.OnlyThis, p.OnlyRef)
	}
	return s
}

// signedPts is a difference of fractions in points with its sign: 0.1 is
// "+10.0".
func signedPts(v float64) string { return strings.TrimSuffix(SignedPct(v*100), "%") }

func checkLines(c *ConformanceCell) []string {
	if c == nil {
		return []string{"—"}
	}
	lines := []string{fmt.Sprintf("%d pass · %d fail · %d skip", c.Pass, c.Fail, c.Skip)}
	if len(c.Failed) > 0 {
		lines = append(lines, "failed: "+strings.Join(c.Failed, ", "))
	}
	return lines
}

// SignedPct writes a percent change with its sign: "+1.2%", "-9.6%".
func SignedPct(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + "%"
}

// lackingText says how many of a cell's runs had no in_tput, when some did
// and some did not; "" otherwise.
func lackingText(c *PhaseCell) string {
	if c.InTputLacking == 0 || c.InTput == nil {
		return ""
	}
	return fmt.Sprintf(" (none in %d of %d runs)", c.InTputLacking, c.Runs)
}
