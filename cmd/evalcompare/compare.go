// Package evalcompare is `glmbench eval compare`: is an endpoint serving
// the same model, at the same numerics, as a reference? The same prompts go
// to both at temperature 0, and their answers are compared pair by pair.
package evalcompare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/evals/compare"
	"github.com/glmbench/glmbench/evals/equiv"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// Options are eval compare's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory
	// Common is the endpoint under test, --connect-timeout, --label, --out.
	target.Common
	// Reference is the reference endpoint, named by the same flags with a
	// reference- prefix, its model and key handled exactly as the endpoint's.
	Reference endpoints.Flags

	Tokens, TopLogprobs, Limit, Concurrency int
	Dataset                                 string
	RequestTimeout                          time.Duration
	// ExtraBody is --extra-body, parsed by validate into extra.
	ExtraBody string
	extra     json.RawMessage

	// WeightDType and Seed shape the built-in engine that stands in for
	// the endpoint when none is given; ReferenceWeightDType and
	// ReferenceSeed the reference's.
	WeightDType, ReferenceWeightDType string
	Seed, ReferenceSeed               uint64
}

func (o *Options) shared() *target.Flags {
	return &target.Flags{
		Common:         &o.Common,
		RequestTimeout: target.Limit{To: &o.RequestTimeout, Default: 5 * time.Minute},
		Builtin:        builtin(o.WeightDType, o.Seed),
	}
}

// builtin adjusts a built-in engine's options to dtype and seed.
func builtin(dtype string, seed uint64) func(*engine.Options) {
	return func(e *engine.Options) {
		e.WeightDType = dtype
		if seed != 0 {
			e.Seed = seed
		}
	}
}

// NewCmdCompare binds eval compare's flags. runF replaces the run function in tests.
func NewCmdCompare(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Is the endpoint serving the reference's model? Paired greedy, logprob and perplexity comparison",
		Long: `Compare sends the same prompts at temperature 0 to the endpoint and to a reference
(--reference-endpoint, or --reference-endpoints FILE --reference-name N, its
model and key handled as the endpoint's), and compares the answers pair by
pair: the greedy continuations of --tokens tokens (exact-match rate, token
agreement up to the first divergence, where they first diverge), where both
give top_logprobs the top-1 agreement, the chosen tokens' logprob difference
and a KL estimate, and where both echo prompt logprobs the per-token nll
difference and the per-document perplexity ratio with a paired bootstrap 95%
interval. The verdict is identical, numerically different or different
model, by the rule the report states. --extra-body adds a JSON object's
fields to every request, the endpoint's and the reference's alike (the
verdict compares answers to the same request), and the report records it;
its chat_template_kwargs are merged into the {"enable_thinking": false} the
comparison sends (a template's other kwarg, DeepSeek-V3.1's "thinking").

The reference's certificate is verified by its own --reference-ca-cert or
--reference-insecure (or its endpoints file's ca_cert, insecure), and its
client certificate is --reference-client-cert, --reference-client-key, as
the endpoint's are --ca-cert, --insecure, --client-cert and --client-key.

Without endpoints, two built-in engines are compared: the endpoint's with
--weight-dtype and --seed, the reference's with --reference-weight-dtype and
--reference-seed (fp32, seed 1 by default), so
  glmbench eval compare --weight-dtype nvfp4
measures what a 4-bit quantization of the same checkpoint changes.`,
		Example: `  glmbench eval compare --weight-dtype bf16
  glmbench eval compare --endpoint https://api.example.com/v1 --model glm-5 --reference-endpoint http://127.0.0.1:30000/v1`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.shared().Parsed()
			// What the parse tells of the reference's flags, as Parsed
			// records it of the endpoint's.
			fl := cmd.Flags()
			o.Reference.APIKeyEnvSet = fl.Changed("reference-api-key-env")
			o.Reference.InsecureSet = fl.Changed("reference-insecure")
			o.Reference.Prefix = "reference-"
			if runF != nil {
				return runF(o)
			}
			return Run(cmd.Context(), o)
		},
	}
	o.shared().AddFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.Reference.Endpoint, "reference-endpoint", "", "the reference's API base URL (none: a built-in engine)")
	fl.StringVar(&o.Reference.Model, "reference-model", "", "the reference's model id (default: the first that its /v1/models lists)")
	fl.StringVar(&o.Reference.APIKeyEnv, "reference-api-key-env", endpoints.DefaultAPIKeyEnv, "environment variable holding the reference's API key")
	fl.StringArrayVar(&o.Reference.Headers, "reference-header", nil, "extra request header K=V for the reference (repeatable; values never appear in output)")
	fl.StringArrayVar(&o.Reference.HeaderEnv, "reference-header-env", nil, "extra request header K=VAR for the reference, its value read from the environment variable VAR (repeatable)")
	fl.StringVar(&o.Reference.File, "reference-endpoints", "", "YAML file of endpoints holding the reference")
	fl.StringVar(&o.Reference.Name, "reference-name", "", "which endpoint of --reference-endpoints is the reference")
	fl.StringVar(&o.Reference.CACert, "reference-ca-cert", "", "PEM file of CA certificates to trust beside the system's for the reference (a reference behind a private CA)")
	fl.BoolVar(&o.Reference.Insecure, "reference-insecure", false, "do not verify the reference's TLS certificate (a self-signed lab server)")
	fl.StringVar(&o.Reference.ClientCert, "reference-client-cert", "", "PEM file of the client certificate for a reference that asks for one (mTLS), with --reference-client-key")
	fl.StringVar(&o.Reference.ClientKey, "reference-client-key", "", "PEM file of --reference-client-cert's private key")
	fl.IntVar(&o.Tokens, "tokens", 64, "greedy continuation length (max_tokens) of each prompt")
	fl.IntVar(&o.TopLogprobs, "top-logprobs", 5, "top_logprobs asked per position (0: none)")
	fl.IntVar(&o.Limit, "limit", 0, "compare at most N prompts (0: all)")
	fl.IntVar(&o.Concurrency, "concurrency", 8, "prompts in flight (each to both endpoints at once)")
	fl.StringVar(&o.Dataset, "dataset", "", "documents to compare on (wikitext raw, JSONL with text, plain text), paragraph by paragraph; default: the embedded samples")
	fl.StringVar(&o.WeightDType, "weight-dtype", "fp32", "the built-in endpoint's weights: fp32, bf16, fp8_e4m3 or nvfp4 (no --endpoint only)")
	fl.Uint64Var(&o.Seed, "seed", 1, "seed of the built-in endpoint's weights (another seed is another model)")
	fl.StringVar(&o.ReferenceWeightDType, "reference-weight-dtype", "fp32", "the built-in reference's weights (no --reference-endpoint only)")
	fl.Uint64Var(&o.ReferenceSeed, "reference-seed", 1, "seed of the built-in reference's weights")
	fl.StringVar(&o.ExtraBody, "extra-body", "", `a JSON object of fields added to every request's body, the endpoint's and the reference's alike, and recorded in the report, e.g. '{"top_k": 1}' (not the fields compare writes: `+strings.Join(slices.Sorted(maps.Keys(compare.ExtraOwned())), ", ")+`; chat_template_kwargs are merged into its {"enable_thinking": false}, e.g. '{"chat_template_kwargs": {"thinking": false}}')`)
	return cmd
}

// validate checks the flags that need no endpoint.
func (o *Options) validate() ([]compare.Item, error) {
	switch {
	case o.Tokens < 1 || o.Tokens > 4096:
		return nil, badinput.Errorf("--tokens must be from 1 to 4096, not %d", o.Tokens)
	case o.TopLogprobs < 0 || o.TopLogprobs > 20:
		return nil, badinput.Errorf("--top-logprobs must be from 0 to 20 (OpenAI's bound), not %d", o.TopLogprobs)
	case o.Limit < 0:
		return nil, badinput.Errorf("--limit must not be negative")
	case o.Concurrency < 1:
		return nil, badinput.Errorf("--concurrency must be at least 1")
	case o.Endpoint.Given() && (o.WeightDType != "fp32" || o.Seed != 1):
		return nil, badinput.Errorf("--weight-dtype and --seed shape the built-in endpoint: they do not apply with --endpoint")
	case o.Reference.Given() && (o.ReferenceWeightDType != "fp32" || o.ReferenceSeed != 1):
		return nil, badinput.Errorf("--reference-weight-dtype and --reference-seed shape the built-in reference: they do not apply with --reference-endpoint")
	}
	for _, f := range [...]struct{ flag, dtype string }{{"--weight-dtype", o.WeightDType}, {"--reference-weight-dtype", o.ReferenceWeightDType}} {
		if _, err := model.ParseDType(f.dtype); err != nil {
			return nil, badinput.Errorf("%s: %v", f.flag, err)
		}
	}
	if err := o.shared().Validate("connect-timeout", "request-timeout"); err != nil {
		return nil, err
	}
	var err error
	if o.extra, err = endpoints.ParseExtraBody("--extra-body", o.ExtraBody, compare.ExtraOwned()); err != nil {
		return nil, err
	}
	if err := compare.CheckExtra("--extra-body", o.extra); err != nil {
		return nil, err
	}
	items := compare.SampleItems()
	if o.Dataset != "" {
		// A device or a pipe (/dev/zero, <(…)) would be read forever.
		if fi, err := os.Stat(o.Dataset); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, badinput.Errorf("--dataset %s: not a file or a folder", o.Dataset)
		}
		if items, err = compare.DocItems(o.Dataset, o.Limit); err != nil {
			var de *evals.DataError
			if errors.As(err, &de) {
				return nil, badinput.Wrap(err)
			}
			return nil, err
		}
	}
	if o.Limit > 0 && len(items) > o.Limit {
		items = items[:o.Limit]
	}
	if len(items) == 0 {
		return nil, badinput.Errorf("--dataset %s: no paragraph to compare on", o.Dataset)
	}
	return items, nil
}

// Run is eval compare's work: it checks the flags, opens both endpoints,
// compares them on every item, and writes the report (equivalence section,
// report.md, evals.jsonl with one row per item).
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	items, err := o.validate()
	if err != nil {
		return err
	}
	tg, ref, err := o.openBoth(ctx)
	if err != nil {
		return err
	}
	defer tg.Close()
	defer ref.Close()
	if err := checkOut(tg.Out); err != nil {
		return err
	}
	tg.Endpoint.HideExtraSecrets(o.extra) // a key sent in the body, quoted back in an error
	ref.Endpoint.HideExtraSecrets(o.extra)
	side := func(ep *endpoints.Endpoint) compare.Side {
		tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: o.Concurrency, ConnectTimeout: o.ConnectTimeout, Trust: ep.Trust})
		return compare.Side{Client: endpoints.NewClient(ep, tr), Model: ep.Model}
	}
	errOut := o.F.IO.ErrOut
	fmt.Fprintf(errOut, "glmbench: comparing %s (%s) against the reference %s (%s) on %d prompts, %d tokens each\n",
		tg.Endpoint, tg.Endpoint.Model, ref.Endpoint, ref.Endpoint.Model, len(items), o.Tokens)
	rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout*time.Duration(len(items)))
	defer cancel()
	pairs := compare.Run(rctx, side(tg.Endpoint), side(ref.Endpoint), items, compare.Options{Tokens: o.Tokens, TopLogprobs: o.TopLogprobs, Concurrency: o.Concurrency, RequestTimeout: o.RequestTimeout, Extra: o.extra})
	eq := equiv.Compare(pairs, o.Tokens)
	eq.Reference, eq.ReferenceModel = ref.Endpoint.String(), ref.Endpoint.Model
	eq.Dataset = evals.SampleOrigin
	if o.Dataset != "" {
		eq.Dataset = o.Dataset
	}
	rep := tg.Report(o.F)
	rep.Equivalence = &eq
	// Both sides' keys and header values hidden, as every output hides them.
	rep.Options.ExtraBody = endpoints.RecordedExtra(endpoints.RecordedExtra(o.extra, tg.Endpoint), ref.Endpoint)
	if err := tg.WriteReport(o.F, rep, nil); err != nil {
		return err
	}
	if err := writeItems(tg.Out, pairs, o.Tokens); err != nil {
		return err
	}
	fmt.Fprintln(o.F.IO.Out, verdictLine(&eq))
	fmt.Fprintf(errOut, "glmbench: report written to %s\n", tg.Out)
	if ctx.Err() != nil {
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	}
	if eq.Verdict == "" {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: errors.New("no verdict: no prompt was answered by both endpoints")}
	}
	return nil
}

// openBoth opens the endpoint and the reference at once: each may wait up
// to --wait-ready for a server still starting (or start a built-in
// engine), and the two waits overlap rather than add up. The first side to
// fail ends the other's wait, and its error is the one returned (the
// other's, then, is only that it was stopped); the side that opened is
// closed.
func (o *Options) openBoth(ctx context.Context) (tg, ref *target.Target, err error) {
	sides, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if ref, err = target.OpenEndpoint(sides, o.F, o.Reference, target.Wait{Connect: o.ConnectTimeout, Ready: o.WaitReady}, "--reference-endpoint", builtin(o.ReferenceWeightDType, o.ReferenceSeed)); err != nil {
			fail(err)
		}
	}()
	if tg, err = o.shared().Open(sides, o.F); err != nil {
		fail(err)
	}
	<-done
	if first != nil {
		for _, t := range []*target.Target{tg, ref} {
			if t != nil {
				t.Close()
			}
		}
		return nil, nil, first
	}
	return tg, ref, nil
}

// writeItems merges one row per compared prompt into the folder's
// evals.jsonl (eval "compare"), keeping the other evals' rows.
func writeItems(dir string, pairs []equiv.Pair, tokens int) error {
	items := make([]schema.EvalItem, len(pairs))
	for i, p := range pairs {
		items[i] = equiv.Item(p, tokens)
	}
	return reports.MergeEvalItemsFile(dir, []string{equiv.EvalName}, items)
}

// verdictLine is the one line on stdout.
func verdictLine(eq *schema.Equivalence) string {
	if eq.Verdict == "" {
		msg := "no verdict"
		if eq.Failure != nil {
			msg += ": " + eq.Failure.Detail
		}
		return msg
	}
	s := fmt.Sprintf("verdict: %s (%d prompts", eq.Verdict, eq.Items)
	if eq.ExactMatch != nil {
		s += fmt.Sprintf(", exact match %.1f%%", *eq.ExactMatch*100)
	}
	if eq.Top1Agreement != nil {
		s += fmt.Sprintf(", top-1 agreement %.1f%%", *eq.Top1Agreement*100)
	}
	if eq.KLMean != nil {
		s += fmt.Sprintf(", KL mean %.3g", *eq.KLMean)
	}
	return s + ")\n  rule: " + eq.Rule
}

// checkOut refuses, before any request, an --out whose report holds a
// load, evals or conformance: eval compare writes a whole report of its own
// (report.json, an empty requests.jsonl, its own evals.jsonl), which would
// throw them away. A report of a comparison alone is replaced, as a rerun
// replaces it.
func checkOut(out string) error {
	old, err := reports.ReadReport(filepath.Join(out, reports.ReportJSON))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badinput.Errorf("--out %s holds a report that eval compare cannot read, which its own would replace: give another --out (%s)", out, text.OneLine(err.Error()))
	}
	var held []string
	if len(old.Phases) > 0 {
		held = append(held, "a load")
	}
	if len(old.Evals) > 0 {
		held = append(held, "evals")
	}
	if len(old.Conformance) > 0 {
		held = append(held, "conformance checks")
	}
	if len(held) == 0 {
		return nil
	}
	return badinput.Errorf("--out %s holds a report of %s, which eval compare's own report would replace: give another --out", out, strings.Join(held, ", "))
}
