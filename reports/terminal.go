package reports

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// CompactWidth is the most columns a line of WriteCompact takes, counted in
// runes, the report's path aside: it fits a terminal of 100 columns or more
// without wrapping.
const CompactWidth = 100

// compactKinds is how many of a phase's error kinds (the servers' messages)
// the compact summary lists, the most frequent first.
const compactKinds = 3

// WriteCompact writes r's phases for a terminal, in plain text that fits
// CompactWidth: one table of the columns that matter, the prefix cache and
// the prompt drift, the server side, only the error classes that occurred with their most
// frequent messages, notes on what was counted but is not an error, and
// mdPath, where the full report went ("" leaves it out). report.md keeps
// every column, message and formula.
func WriteCompact(w io.Writer, r *schema.Report, mdPath string) error {
	p := &printer{w: w}
	if len(r.Phases) > 0 {
		p.f("%s\n\n", fit(fmt.Sprintf("%s: model %s, api %s, %s", r.Label, r.Endpoint.Model, r.Options.APIName(), Plural(len(r.Phases), "phase")), CompactWidth))
		p.compactPhases(r.Phases)
		p.compactCache(r)
		p.compactServer(r)
		p.compactErrors(r.Phases)
		p.compactNotes(r)
	}
	if mdPath != "" {
		p.f("\nFull report: %s\n", mdPath) // whole, however long: it is there to be opened
	}
	return p.err
}

// compactPhases is the phase table: names and statuses left, figures right.
func (p *printer) compactPhases(phases []schema.PhaseResult) {
	head := []string{"phase", "status", "completed", "wall s", "out tok/s", "TTFT med", "TTFT p99", "TPOT med", "error_rate"}
	rows := [][]string{head}
	for _, ph := range phases {
		rows = append(rows, []string{ph.Phase, ph.Status, fmt.Sprintf("%d/%d", ph.Completed, ph.BatchSize),
			num(ph.WallSec, 2), num(ph.OutTput, 1), opt(ph.TTFTMed, 1, 3), opt(ph.TTFTP99, 1, 3),
			opt(ph.TPOTMed, 1e3, 2), num(ph.ErrorRate, 4)})
	}
	p.f("Times in seconds, TPOT in ms, throughput in tokens/s.\n\n")
	for _, line := range alignRows(rows, 2) {
		p.f("%s\n", line)
	}
}

// alignRows lays rows (the first is the head) out in columns two blanks
// apart within CompactWidth: the first left columns read left to right, the
// figures line up on the right. A long first column (a phase name) gives way
// first: report.md has it whole.
func alignRows(rows [][]string, left int) []string {
	const gap = 2
	head := rows[0]
	widths := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	rest := gap * (len(widths) - 1)
	for _, wd := range widths[1:] {
		rest += wd
	}
	widths[0] = max(len(head[0]), min(widths[0], CompactWidth-rest))
	var out []string
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			c = fit(c, widths[i])
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString(strings.Repeat(" ", gap))
			}
			if i < left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// compactErrors lists, per phase with errors, the classes that occurred
// (in schema.Classes order) and its most frequent messages.
func (p *printer) compactErrors(phases []schema.PhaseResult) {
	var lines []string
	for _, ph := range phases {
		var classes []string
		for _, c := range schema.Classes {
			if n := ph.ByClass[c]; n > 0 {
				classes = append(classes, fmt.Sprintf("%s %d", c, n))
			}
		}
		if len(classes) == 0 {
			continue
		}
		lines = append(lines, wrap(fmt.Sprintf("  %s: %s: ", fit(ph.Phase, 32), Plural(ph.Errors, "error")), classes, "      ")...)
		kinds := sortedKeys(ph.ErrorKinds)
		slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(ph.ErrorKinds[b], ph.ErrorKinds[a]) })
		for i, k := range kinds {
			if i == compactKinds {
				lines = append(lines, fmt.Sprintf("      and %d more kinds (report.md)", len(kinds)-i))
				break
			}
			lines = append(lines, fit(fmt.Sprintf("      %d × %s", ph.ErrorKinds[k], text.OneLine(k)), CompactWidth))
		}
	}
	if len(lines) > 0 {
		p.f("\nErrors (only the classes that occurred; each failed request has one):\n%s\n", strings.Join(lines, "\n"))
	}
}

// compactNotes says what was counted but is not an error: requests the cap
// cut off, outputs shorter or longer than asked, data glmbench could not use,
// and a client too busy to keep its plan.
func (p *printer) compactNotes(r *schema.Report) {
	var notes []string
	note := func(ph *schema.PhaseResult, n int, format string, args ...any) {
		if n > 0 {
			notes = append(notes, fit(fmt.Sprintf("  %s: ", fit(ph.Phase, 32))+fmt.Sprintf(format, args...), CompactWidth))
		}
	}
	for i := range r.Phases {
		ph := &r.Phases[i]
		note(ph, ph.Cancelled, "%s cancelled in flight at the cap (cancelled_at_cap)", Plural(ph.Cancelled, "request"))
		note(ph, ph.NotSent, "%s not sent before the cap (not_sent)", Plural(ph.NotSent, "request"))
		note(ph, ph.Short, "%s with fewer output tokens than asked (short_output)", Plural(ph.Short, "request"))
		note(ph, ph.Long, "%s with more output tokens than asked (long_output)", Plural(ph.Long, "request"))
		note(ph, ph.MalformedEvents, "%s (not JSON or not UTF-8) in %s, skipped (malformed_events)",
			Plural(ph.MalformedEvents, "malformed data line"), Plural(ph.MalformedRequests, "request"))
		note(ph, ph.BadUsage, "%s with usage that is no sound count: n counts content events (bad_usage)", Plural(ph.BadUsage, "request"))
	}
	if r.Interrupted {
		notes = append(notes, "  interrupted: phases after the interrupted one did not run")
	}
	if r.Client.Saturated {
		notes = append(notes, fmt.Sprintf("  client saturated: it lagged its plan by up to %s, so its own load may show", ms(r.Client.MaxSendLag)))
	}
	if len(notes) > 0 {
		p.f("\nNotes:\n%s\n", strings.Join(notes, "\n"))
	}
}

// wrap joins items with ", " after prefix (which ends in its own space), starting a new line indented by
// indent before one would pass CompactWidth.
func wrap(prefix string, items []string, indent string) []string {
	var lines []string
	line, start := prefix, true // start: nothing on this line after its prefix or indent yet
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if !start && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(it) > CompactWidth {
			lines = append(lines, fit(line, CompactWidth))
			line, start = indent, true
		}
		if !start {
			line += " "
		}
		line, start = line+it, false
	}
	return append(lines, fit(line, CompactWidth))
}

// fit cuts s to at most n runes, ending in "…" when it was cut.
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
