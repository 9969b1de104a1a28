// Package conform is `glmbench conform`: the API conformance suite against
// an endpoint, written into the report's conformance section.
package conform

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints/conform"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// Options are conform's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory
	// Common is the endpoint, --connect-timeout, --label and --out.
	target.Common
	// Only lists check ids to run (with the checks they need); empty: all.
	Only []string
	// ProbeLimits is the size of the burst the rate-limit and
	// queue-overflow checks send; 0 leaves them out.
	ProbeLimits int

	Timeout      time.Duration
	StallTimeout time.Duration
}

// shared is the flags the endpoint commands share, over o's fields.
func (o *Options) shared() *target.Flags {
	return &target.Flags{
		Common:  &o.Common,
		Section: true,
		// Tighter than run's, and never off: every check has a time limit,
		// so that none can hang, and a check's requests are a few tokens
		// each, so a stream silent for 10 s is already broken (run waits
		// 60 s for a server busy with a long decode). conform.Config would
		// take 0 as its default, so 0 is refused rather than changed.
		RequestTimeout: target.Limit{To: &o.Timeout, Default: conform.DefaultTimeout, Positive: true},
		StallTimeout:   target.Limit{To: &o.StallTimeout, Default: conform.DefaultStallTimeout, Positive: true},
		// conform's request limit was --timeout before it was spelled as
		// run's and eval's.
		Alias: "timeout",
	}
}

// NewCmdConform binds conform's flags. runF replaces the run function in tests.
func NewCmdConform(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "conform",
		Short: "Check which parts of the OpenAI API an endpoint really implements",
		Long: `Conform runs the API conformance suite against an OpenAI-compatible endpoint
(the built-in engine when none is named): named checks, each pass, fail or
skip, with a one-line detail. A skip is a check that could not run at all,
with the reason: one whose prerequisite the endpoint lacks (a stream that
yields content and ends; usage on some chunk) names it. A prerequisite is
never a stricter check's pass: a stream that ends but deviates in shape fails
"stream" alone, and the checks built on streams still run. Every request has
a time limit (--request-timeout, and --stall-timeout of silence inside a
stream), so no check can hang.

Checks, in the order they run:
` + checkList() + `
rate-limit and queue-overflow send a burst of N streams at once and run only
with --probe-limits N.

Writes the conformance section of report.json and a table in report.md,
and prints the table. Into a report of the same label in --out, it writes
only that section: a run of every check replaces the section whole, so a
check removed or renamed since an earlier run does not linger; a run with
--only replaces the entries of the checks it ran and keeps the others.

Exit status: 0 nothing failed, 1 a check failed, 2 bad usage (said before
any request), 130 interrupted.`,
		Example: `  glmbench conform
  glmbench conform --endpoint http://127.0.0.1:30000/v1 --probe-limits 256
  glmbench conform --endpoints endpoints.yaml --name hosted --only stream-usage,completions-echo`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.shared().Parsed()
			if runF != nil {
				return runF(o)
			}
			return Run(o)
		},
	}
	fl := cmd.Flags()
	o.shared().AddFlags(cmd)
	fl.StringSliceVar(&o.Only, "only", nil, "run only these checks (comma list or repeated), with the checks they need")
	fl.IntVar(&o.ProbeLimits, "probe-limits", 0, "send a burst of N streams at once to check 429 Retry-After and queue overflow (0: off)")
	return cmd
}

// checkList is the help's list of checks: id and title.
func checkList() string {
	var b strings.Builder
	for _, c := range conform.Checks {
		fmt.Fprintf(&b, "  %-19s %s\n", c.ID, c.Title)
	}
	return b.String()
}

// maxProbeLimits is the largest burst --probe-limits sends: more streams
// than any server queues, and as many as one client process holds open.
const maxProbeLimits = 100_000

// validate checks the flags that need no endpoint; it runs before anything is sent.
func (o *Options) validate() error {
	// The order conform always checked its limits in.
	if err := o.shared().Validate("request-timeout", "stall-timeout", "connect-timeout"); err != nil {
		return err
	}
	if o.ProbeLimits < 0 || o.ProbeLimits == 1 || o.ProbeLimits > maxProbeLimits {
		// One request cannot overflow anything; a billion streams at once
		// ran the process out of memory before the first was answered.
		return badinput.Errorf("--probe-limits must be 0 (off) or from 2 to %d, got %d", maxProbeLimits, o.ProbeLimits)
	}
	if _, err := conform.Select(o.Only, o.ProbeLimits); err != nil {
		return badinput.Errorf("--only: %v", err)
	}
	return nil
}

// Run is the conform command's work.
func Run(o *Options) error {
	ctx := o.F.Context
	if ctx == nil {
		ctx = context.Background()
	}
	std := o.F.IO
	if err := o.validate(); err != nil {
		return err
	}
	tg, err := o.shared().Open(ctx, o.F)
	if err != nil {
		return err
	}
	defer tg.Close()
	ep := tg.Endpoint

	fmt.Fprintf(std.ErrOut, "glmbench: conformance of %s\n", ep)
	results, err := conform.Run(ctx, conform.Config{
		Endpoint: ep, Only: o.Only, ProbeLimits: o.ProbeLimits,
		Timeout: o.Timeout, StallTimeout: o.StallTimeout, ConnectTimeout: o.ConnectTimeout,
		OnResult: func(i, n int, r schema.CheckResult) {
			fmt.Fprintf(std.ErrOut, "glmbench: [%2d/%d] %-19s %s\n", i+1, n, r.ID, r.Status)
		},
	})
	if err != nil {
		return badinput.Wrap(err)
	}
	interrupted := ctx.Err() != nil

	var failed []string
	for _, r := range results {
		if r.Status == string(conform.Fail) {
			failed = append(failed, r.ID)
		}
	}
	var failure error
	if len(failed) > 0 {
		failure = fmt.Errorf("%d of %d conformance checks failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return tg.WriteSection(o.F, target.Section{
		Change:      func(rep *schema.Report) { reports.PutChecks(rep, results, len(o.Only) > 0, conform.IDs()) },
		Table:       func(w io.Writer) error { return reports.WriteChecks(w, results) },
		Interrupted: interrupted, Failed: failure,
	})
}
