package gate

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/threshold"
)

// Mark is ✓ for a line that passed and ✗ for one that crossed its bound.
func (c *Line) Mark() string {
	if c.Passed {
		return "✓"
	}
	return "✗"
}

// Observed says in words what the line saw: the values, the change, the
// interval and the runs behind them, or what was missing.
func (c *Line) Observed() string {
	u := unit(c.Metric)
	if c.Missing != "" {
		return c.missingText()
	}
	s := val(*c.Current) + u
	note := c.Note()
	switch {
	case c.Change != nil && note != "":
		s += fmt.Sprintf(" vs baseline %s%s (%s; %s)", val(*c.Baseline), u, pct(*c.Change), note)
	case c.Change != nil:
		s += fmt.Sprintf(" vs baseline %s%s (%s)", val(*c.Baseline), u, pct(*c.Change))
	case note != "":
		s += " (" + note + ")"
	}
	return s
}

// Note gives what stands behind the values beyond one run each: the
// confidence interval and the runs averaged, or what was missing.
func (c *Line) Note() string {
	if c.Missing != "" {
		return c.missingText()
	}
	var parts []string
	if c.MethodMismatch != "" {
		parts = append(parts, c.MethodMismatch)
	}
	if c.CI != nil {
		switch {
		case c.PairedItems > 0:
			parts = append(parts, fmt.Sprintf("paired over %d items, 95%% CI [%s, %s]", c.PairedItems, pct(c.CI[0]), pct(c.CI[1])))
		case c.Change != nil:
			parts = append(parts, fmt.Sprintf("95%% CI %s to %s", pct(c.CI[0]), pct(c.CI[1])))
		default:
			parts = append(parts, fmt.Sprintf("95%% CI of the mean %s to %s", val(c.CI[0]), val(c.CI[1])))
		}
	}
	if c.BaselineLacking > 0 {
		parts = append(parts, fmt.Sprintf("%s missing in %d of %s", c.Metric, c.BaselineLacking, reports.Plural(c.BaselineLacking+len(c.BaselineRuns), "baseline run")))
	}
	if c.CurrentLacking > 0 {
		parts = append(parts, fmt.Sprintf("%s missing in %d of %s", c.Metric, c.CurrentLacking, reports.Plural(c.CurrentLacking+len(c.CurrentRuns), "current run")))
	}
	switch {
	case c.Change != nil && (len(c.CurrentRuns) > 1 || len(c.BaselineRuns) > 1):
		parts = append(parts, fmt.Sprintf("means of %s vs %s", reports.Plural(len(c.BaselineRuns), "baseline run"), reports.Plural(len(c.CurrentRuns), "current run")))
	case c.Change == nil && len(c.CurrentRuns) > 1:
		parts = append(parts, fmt.Sprintf("mean of %s", reports.Plural(len(c.CurrentRuns), "run")))
	}
	return strings.Join(parts, ", ")
}

func (c *Line) missingText() string {
	u := unit(c.Metric)
	switch c.Missing {
	case "both":
		return fmt.Sprintf("%s missing in the baseline and the current reports", c.Metric)
	case "current":
		s := fmt.Sprintf("%s missing in the current report", c.Metric)
		if c.Baseline != nil {
			s += " (baseline " + val(*c.Baseline) + u + ")"
		}
		return s
	case "baseline":
		return fmt.Sprintf("%s%s, but missing in the baseline", val(*c.Current), u)
	}
	return c.Missing
}

// Text is the line as printed: ✓/✗, the expression and what was observed.
func (c *Line) Text() string { return c.Mark() + " " + c.Expr + ": " + c.Observed() }

// WriteLines prints one ✓/✗ line per threshold and scope, after a line
// naming the default thresholds when they were used.
func WriteLines(w io.Writer, g *Result) error {
	var b strings.Builder
	if g.Defaulted {
		fmt.Fprintf(&b, "no thresholds given; the defaults: %s\n", defaultsList())
	}
	for i := range g.Lines {
		b.WriteString(g.Lines[i].Text() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summary is the gate's verdict in one line: "passed, 9 checks" or
// "2 of 9 checks crossed: a, b".
func (g *Result) Summary() string {
	crossed := g.Crossed()
	if len(crossed) == 0 {
		return fmt.Sprintf("passed, %d checks", len(g.Lines))
	}
	var names []string
	for _, c := range crossed {
		names = append(names, c.Expr)
	}
	return fmt.Sprintf("%d of %d checks crossed: %s", len(crossed), len(g.Lines), strings.Join(names, ", "))
}

// WriteMarkdown renders the gate as a Markdown section, for
// $GITHUB_STEP_SUMMARY or a pull-request comment.
func WriteMarkdown(w io.Writer, g *Result) error {
	var b bytes.Buffer
	if n := len(g.Crossed()); n > 0 {
		fmt.Fprintf(&b, "## glmbench gate: ✗ %d of %d checks crossed\n\n", n, len(g.Lines))
	} else {
		fmt.Fprintf(&b, "## glmbench gate: ✓ passed, %d checks\n\n", len(g.Lines))
	}
	fmt.Fprintf(&b, "Baseline: %s. Current: %s.\n\n", runsText(g.BaselineLabels), runsText(g.CurrentLabels))
	if g.Defaulted {
		fmt.Fprintf(&b, "No thresholds given; the defaults: %s.\n\n", defaultsList())
	}
	var rows [][]string
	for i := range g.Lines {
		c := &g.Lines[i]
		base, cur, ch := "—", "—", "—"
		if c.Baseline != nil {
			base = val(*c.Baseline) + unit(c.Metric)
		}
		if c.Current != nil {
			cur = val(*c.Current) + unit(c.Metric)
		}
		if c.Change != nil {
			ch = pct(*c.Change)
		}
		rows = append(rows, []string{c.Mark(), "`" + strings.ReplaceAll(c.Expr, "`", "'") + "`", base, cur, ch, reports.MDCell(c.Note())})
	}
	// A bytes.Buffer never fails a write: only w can.
	_ = reports.WriteCompactTable(&b, []string{"", "threshold", "baseline", "current", "change", "note"}, rows)
	_, err := w.Write(b.Bytes())
	return err
}

// AppendStepSummary appends the gate's Markdown to path (GitHub Actions'
// $GITHUB_STEP_SUMMARY); other steps write to the same file, so it is
// never truncated.
func AppendStepSummary(path string, g *Result) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := WriteMarkdown(f, g); err != nil {
		f.Close()
		return err
	}
	if _, err := io.WriteString(f, "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// JUnit XML, as CI systems read it: one suite, one test case per line.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the gate as JUnit XML: test suite "glmbench gate",
// one test case per line, named by its expression; a crossed line is a
// failure whose message holds the observed values.
func WriteJUnit(w io.Writer, g *Result) error {
	s := junitSuite{Name: "glmbench gate", Tests: len(g.Lines), Failures: len(g.Crossed()), Time: "0"}
	for i := range g.Lines {
		c := &g.Lines[i]
		tc := junitCase{Name: c.Expr, Classname: "glmbench.gate." + c.Scope, Time: "0"}
		if c.Passed {
			tc.SystemOut = c.Text()
		} else {
			tc.Failure = &junitFailure{Message: c.Observed(), Type: "threshold crossed", Text: c.Text()}
		}
		s.Cases = append(s.Cases, tc)
	}
	doc := junitSuites{Name: "glmbench", Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// runsText names a side's runs by label: "main (3 runs)", "a, b".
func runsText(labels []string) string {
	var parts []string
	for i := 0; i < len(labels); {
		j := i
		for j < len(labels) && labels[j] == labels[i] {
			j++
		}
		if n := j - i; n > 1 {
			parts = append(parts, fmt.Sprintf("%s (%d runs)", labels[i], n))
		} else {
			parts = append(parts, labels[i])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}

func defaultsList() string {
	var parts []string
	for _, t := range threshold.Defaults() {
		parts = append(parts, t.String())
	}
	return strings.Join(parts, ", ")
}

// val prints a metric value with five significant digits, and large ones
// (100000 tok/s) whole rather than in exponent form.
func val(v float64) string {
	s := strconv.FormatFloat(v, 'g', 5, 64)
	if strings.Contains(s, "e+") {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s
}

// pct prints a change in percent with its sign.
func pct(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+∞%"
	case math.IsInf(v, -1):
		return "-∞%"
	}
	return reports.SignedPct(v)
}
