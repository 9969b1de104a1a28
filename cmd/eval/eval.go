// Package eval is `glmbench eval`: quality evals (ppl, long-ppl, MMLU,
// TriviaQA) against an endpoint, written into the report's evals section.
package eval

import (
	"context"
	"encoding/json"
	"fmt"
	stdio "io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// Options are eval's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory

	// Eval is the positional argument: an eval's name or "all".
	Eval string
	// Common is the endpoint, --connect-timeout, --label and --out.
	target.Common
	// Datasets are the --dataset values: PATH, or NAME=PATH.
	Datasets []string
	// Shots is TriviaQA's --shots file.
	Shots       string
	Limit       int
	Window      int
	GenTokens   int
	Concurrency int

	RequestTimeout time.Duration
	// ExtraBody is --extra-body, parsed by validate into extra.
	ExtraBody string
	extra     json.RawMessage
	// ProgressEvery is how often plain progress lines are printed when
	// stderr is not a terminal.
	ProgressEvery time.Duration
}

// shared is the flags the endpoint commands share, over o's fields.
func (o *Options) shared() *target.Flags {
	return &target.Flags{
		Common:  &o.Common,
		Section: true,
		// 10 min, where run has none: an eval's requests are not streamed,
		// so no TTFT or stall limit ends a hung one (and eval has no
		// --stall-timeout); a whole request is the only thing to bound.
		RequestTimeout: target.Limit{To: &o.RequestTimeout, Default: 10 * time.Minute},
	}
}

// NewCmdEval binds eval's flags. runF replaces the run function in tests.
func NewCmdEval(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f, ProgressEvery: 10 * time.Second}
	cmd := &cobra.Command{
		Use:   "eval ppl|long-ppl|mmlu|triviaqa|all",
		Short: "Measure the model's quality: perplexity, long-decode perplexity, MMLU, TriviaQA",
		Long: `Eval checks that the model behind an endpoint is the model it should be: a
deployment's quantization or kernels can damage it quietly while throughput
looks fine. Every eval uses raw /v1/completions (no chat template) where it
gives what the eval needs, else /v1/chat/completions where the eval can be
computed there (the report's method names the route; ppl has none).

  ppl       token perplexity of documents by echo (prompt logprobs), in
            lm-eval's disjoint windows of --window tokens; also word and byte
            perplexity and bits per byte
  long-ppl  perplexity of --gen-tokens tokens the model generates itself at
            temperature 1, and worst_seg, the highest of any 256-token segment
            (one shorter than min(128, --gen-tokens) counts for nothing; with
            none, no worst_seg); where ignore_eos is refused
            (the OpenAI API), generated without it, method *-until-eos,
            tokens counting what was scored (a generation that stops at once
            scores nothing)
  mmlu      MMLU 5-shot, by the log-likelihood of " A" " B" " C" " D" (echo),
            else by the top_logprobs of one generated token, else on chat by
            the first token's top_logprobs, else by the letter a greedy
            answer's content names (a thinking model's reasoning, and a
            leading <think>...</think> left in content, is never read)
  triviaqa  TriviaQA 5-shot, greedy to a newline, exact match with any alias
            (on chat, read from the content's first line that is not blank)
  A question with no answer (reasoning only within the budget, no letter)
  is scored wrong and counted in no_answer; mmlu and triviaqa fail when the
  first question gets none, or more than half do.
  all       the four, in this order

Before ppl and mmlu, one echo probe checks that the endpoint gives prompt
logprobs. When it cannot, the eval says why in one kind (echo_rejected,
echo_server_error, echo_ignored, logprobs_missing, echo_misaligned,
echo_implausible) with the HTTP status, the answer and the request, and gives
no score rather than a wrong one. Only requests that got no answer are retried.

--extra-body adds a JSON object's fields to every generation request (not
/tokenize) and the report records it: a hybrid reasoning model (GLM-4.5 and
later, Qwen3 on vLLM or SGLang) thinks before it answers unless asked
'{"chat_template_kwargs": {"enable_thinking": false}}', and MMLU and
TriviaQA on chat then wait out its reasoning (DeepSeek-V3.1's template reads
"thinking" instead, and thinks only when it is true). The fields the evals
write are refused, and a field the endpoint refuses is named as
--extra-body's.

Without --dataset each eval runs on a small sample set built in. Data sets:
ppl and long-ppl: wikitext raw (wiki.test.raw), plain text, JSONL with a
"text" field, or parquet with a "text" column (Salesforce/wikitext's
test-*.parquet, or its folder); mmlu: the original folder (dev/*_dev.csv,
test/*_test.csv), JSONL/CSV/parquet with question, choices, answer, or
cais/mmlu's parquet folder (all/ or one per subject: dev-*.parquet gives the
shots, test-*.parquet the questions); triviaqa: the original JSON
({"Data": [...]}), JSONL, or parquet (mandarjoshi/trivia_qa's
rc.nocontext/validation-*.parquet). Files downloaded with
huggingface-cli download --repo-type dataset are read as they are.

Exit status: 0 every eval scored, 1 any eval gave no score, 2 bad usage or a
bad data set (said before any request), 130 interrupted.`,
		Example: `  glmbench eval all
  glmbench eval ppl --endpoint http://127.0.0.1:30000/v1 --dataset wikitext-2-raw/wiki.test.raw
  glmbench eval all --endpoint https://api.example.com/v1 --model glm-5 --dataset mmlu=data/ --dataset triviaqa=web-dev.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badinput.Errorf("eval takes one of %s, all (see glmbench eval --help)", strings.Join(evals.Names(), ", "))
			}
			return nil
		},
		ValidArgs: append(evals.Names(), "all"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Eval = args[0]
			o.shared().Parsed()
			return cmdutil.Dispatch(cmd, o, runF, Run)
		},
	}
	fl := cmd.Flags()
	o.shared().AddFlags(cmd)
	fl.StringArrayVar(&o.Datasets, "dataset", nil, "data set PATH for one eval, or NAME=PATH (repeatable; for all, always NAME=PATH); default: the built-in sample")
	fl.StringVar(&o.Shots, "shots", "", "triviaqa: take the 5 shots from this file (default: the data set's first five, not scored)")
	fl.IntVar(&o.Limit, "limit", 0, "items per eval: documents, prompts, questions per MMLU subject, questions (0: all; long-ppl 16, triviaqa 1000)")
	fl.IntVar(&o.Window, "window", evals.DefaultWindow, "ppl: tokens per request, as lm-eval's max_length (one carried, window-2 scored, one generated)")
	fl.IntVar(&o.GenTokens, "gen-tokens", evals.DefaultGenTokens, "long-ppl: tokens generated per prompt")
	fl.IntVar(&o.Concurrency, "concurrency", evals.DefaultConcurrency, "requests in flight at once")
	fl.StringVar(&o.ExtraBody, "extra-body", "", `a JSON object of fields added to every generation request's body and recorded in the report, e.g. '{"chat_template_kwargs": {"enable_thinking": false}}' for a hybrid reasoning model (GLM, Qwen3 on vLLM or SGLang) to answer without thinking, or '{"reasoning_effort": "low"}' (not the fields the evals write: `+strings.Join(slices.Sorted(maps.Keys(evals.EvalFields)), ", ")+`)`)
	return cmd
}

// validate checks the flags and loads every data set: a bad one is bad
// input, said before any request.
func (o *Options) validate() ([]evals.Job, error) {
	var selected []evals.Eval
	if o.Eval == "all" {
		selected = evals.Evals
	} else if e, ok := evals.Lookup(o.Eval); ok {
		selected = []evals.Eval{e}
	} else {
		return nil, badinput.Errorf("no eval %q: want one of %s, all", o.Eval, strings.Join(evals.Names(), ", "))
	}
	for _, c := range []struct {
		flag string
		v    int
		min  int
		max  int // 0: none
	}{{"--window", o.Window, 3, maxTokens}, {"--gen-tokens", o.GenTokens, 1, maxTokens}, {"--concurrency", o.Concurrency, 1, 0}, {"--limit", o.Limit, 0, 0}} {
		if c.v < c.min {
			return nil, badinput.Errorf("%s must be at least %d, got %d", c.flag, c.min, c.v)
		}
		if c.max > 0 && c.v > c.max {
			return nil, badinput.Errorf("%s must be at most %d (2^24 tokens), got %d", c.flag, c.max, c.v)
		}
	}
	// eval has always said this in one line for both of its limits.
	if o.ConnectTimeout < 0 || o.RequestTimeout < 0 {
		return nil, badinput.Errorf("timeouts must not be negative")
	}
	var err error
	if o.extra, err = endpoints.ParseExtraBody("--extra-body", o.ExtraBody, evals.EvalFields); err != nil {
		return nil, err
	}
	paths, err := datasetPaths(o.Eval, o.Datasets)
	if err != nil {
		return nil, err
	}
	var jobs []evals.Job
	for _, e := range selected {
		j := evals.Job{Eval: e}
		if p, ok := paths[e.Name]; ok {
			if j.In.Data, err = e.Load(p, o.Limit); err != nil {
				return nil, badData(e.Name, err)
			}
		} else {
			j.In.Data = e.Sample()
		}
		jobs = append(jobs, j)
	}
	if err := evals.SetTriviaShots(jobs, o.Shots); err != nil {
		return nil, err
	}
	return jobs, nil
}

// maxTokens bounds --window and --gen-tokens: 2^24 tokens is past every
// served context (the longest stated are 10M tokens), so a larger one is a
// typo, said before any request rather than by the endpoint.
const maxTokens = 1 << 24

// checkContext refuses, before any eval request, a --window (ppl) or
// --gen-tokens (long-ppl) past the context the endpoint states
// (endpoints.Client.ContextLength: vLLM's max_model_len, SGLang's
// context_length, llama.cpp's n_ctx per slot, TGI's max_total_tokens): each
// of its requests would be refused or cut, and the eval would score
// nothing. An endpoint that states none is not asked to.
func checkContext(ctx context.Context, ep *endpoints.Endpoint, connect time.Duration, jobs []evals.Job, window, gen int) error {
	type tokenFlag struct {
		flag string
		v    int
	}
	var checks []tokenFlag
	for _, j := range jobs {
		switch j.Eval.Name {
		case "ppl":
			checks = append(checks, tokenFlag{"--window", window})
		case "long-ppl":
			checks = append(checks, tokenFlag{"--gen-tokens", gen})
		}
	}
	if len(checks) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, connect+20*time.Second)
	defer cancel()
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: connect, Trust: ep.Trust})
	defer tr.Close()
	n, source, err := endpoints.NewClient(ep, tr).ContextLength(ctx)
	if err != nil || n <= 0 {
		return nil // not stated, or not said in time: the evals find out
	}
	for _, c := range checks {
		if c.v > n {
			return badinput.Errorf("%s %d passes the endpoint's context of %d tokens (%s): give %s %d or less", c.flag, c.v, n, source, c.flag, n)
		}
	}
	return nil
}

func badData(name string, err error) error {
	return badinput.Errorf("%s data set: %v", name, err)
}

// datasetPaths reads the --dataset values into paths by eval name. For one
// eval a bare PATH is its; for all every value is NAME=PATH.
func datasetPaths(eval string, values []string) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range values {
		name, path, named := strings.Cut(v, "=")
		if _, known := evals.Lookup(name); !named || !known {
			if eval == "all" {
				return nil, badinput.Errorf("--dataset %q: eval all takes NAME=PATH, NAME one of %s", v, strings.Join(evals.Names(), ", "))
			}
			name, path = eval, v
		}
		if eval != "all" && name != eval {
			return nil, badinput.Errorf("--dataset %q names %s, but the eval is %s", v, name, eval)
		}
		if path == "" {
			return nil, badinput.Errorf("--dataset %q: no path", v)
		}
		if _, dup := paths[name]; dup {
			return nil, badinput.Errorf("--dataset: %s given twice", name)
		}
		paths[name] = path
	}
	return paths, nil
}

// Run is the eval command's work.
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	io := o.F.IO
	jobs, err := o.validate()
	if err != nil {
		return err
	}
	tg, err := o.shared().Open(ctx, o.F)
	if err != nil {
		return err
	}
	defer tg.Close()
	ep := tg.Endpoint
	if err := checkContext(ctx, ep, o.ConnectTimeout, jobs, o.Window, o.GenTokens); err != nil {
		return err
	}
	recorded := endpoints.RecordedExtra(o.extra, tg.Endpoint) // as the report records it, secrets hidden
	ep.HideExtraSecrets(o.extra)                              // and as a server may quote them back
	if err := checkExtraRecord(tg.Out, recorded, jobs); err != nil {
		return err
	}

	prog := &evals.Progress{}
	r := evals.NewRunner(evals.Config{
		Endpoint: ep, Concurrency: o.Concurrency, Window: o.Window, GenTokens: o.GenTokens, Limit: o.Limit,
		ConnectTimeout: o.ConnectTimeout, RequestTimeout: o.RequestTimeout, Extra: o.extra, Progress: prog,
	})
	defer r.Close()
	var results []schema.EvalResult
	var items []schema.EvalItem
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(io.ErrOut, "glmbench: %s on %s (%d items), %s\n", j.Eval.Name, j.In.Data.Origin(), j.In.Data.Len(), ep)
		stop := startProgress(io, prog, o.ProgressEvery)
		t0 := time.Now()
		res, its := j.Eval.Run(ctx, r, j.In)
		items = append(items, its...)
		res.Dataset = j.In.Data.Origin()
		stop()
		if res.Failure != nil {
			res.Failure.Body = ep.Redact(res.Failure.Body)
			res.Failure.Detail = ep.Redact(res.Failure.Detail)
			showRecorded(res.Failure.Request, recorded)
		}
		fmt.Fprintf(io.ErrOut, "glmbench: %s in %.1fs\n", resultLine(&res), time.Since(t0).Seconds())
		results = append(results, res)
	}
	interrupted := ctx.Err() != nil

	var down []string
	for _, res := range results {
		if res.Status != evals.StatusOK {
			down = append(down, res.Name+" ("+res.Failure.Kind+")")
		}
	}
	var failed error
	if len(down) > 0 {
		failed = fmt.Errorf("no score from %s (see the failures in the report)", strings.Join(down, ", "))
	}
	// The items go first, beside the report; should that fail, the report
	// is still written, and the failure said after it.
	itemsErr := writeItems(tg.Out, results, items)
	if err := tg.WriteSection(o.F, target.Section{
		Change: func(rep *schema.Report) {
			reports.MergeEvals(rep, results)
			rep.Options.ExtraBody = recorded // checkExtraRecord: the report's other requests went with it too
		},
		Table:       func(w stdio.Writer) error { return reports.WriteEvals(w, results) },
		Interrupted: interrupted, Failed: failed,
	}); err != nil {
		return err
	}
	return itemsErr
}

// resultLine is the one line said when an eval ends.
func resultLine(r *schema.EvalResult) string {
	s := fmt.Sprintf("%s %s", r.Name, r.Status)
	if r.Method != "" {
		s += " (" + r.Method + ")"
	}
	if m := metricsText(r); m != "" {
		s += ": " + m
	}
	if f := r.Failure; f != nil {
		s += "; " + failureText(f)
	}
	return s
}

// metricsText lists the metrics on one line; per-subject accuracies (57
// for MMLU) are only counted there: the report lists them.
func metricsText(r *schema.EvalResult) string {
	text, subjects := reports.MetricsText(r)
	if subjects > 0 {
		text = strings.TrimSpace(text + fmt.Sprintf(" (and %d subjects in the report)", subjects))
	}
	return text
}

func failureText(f *schema.EvalFailure) string {
	s := f.Short()
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	return s
}
