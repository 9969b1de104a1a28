package evals

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/glmbench/glmbench/reports/schema"
)

// MMLU categories, as lm-eval groups its 57 subjects.
const (
	STEM           = "stem"
	Humanities     = "humanities"
	SocialSciences = "social_sciences"
	Other          = "other"
)

// Categories lists the categories in report order.
var Categories = []string{STEM, Humanities, SocialSciences, Other}

// mmluCategory is lm-eval's mapping (lm_eval/tasks/mmlu/_generate_configs.py);
// it differs from hendrycks/test's categories.py only on anatomy (STEM here,
// other there).
var mmluCategory = func() map[string]string {
	m := map[string]string{}
	for cat, subjects := range map[string]string{
		STEM: "abstract_algebra anatomy astronomy college_biology college_chemistry college_computer_science college_mathematics " +
			"college_physics computer_security conceptual_physics electrical_engineering elementary_mathematics high_school_biology " +
			"high_school_chemistry high_school_computer_science high_school_mathematics high_school_physics high_school_statistics machine_learning",
		Humanities: "formal_logic high_school_european_history high_school_us_history high_school_world_history international_law " +
			"jurisprudence logical_fallacies moral_disputes moral_scenarios philosophy prehistory professional_law world_religions",
		SocialSciences: "econometrics high_school_geography high_school_government_and_politics high_school_macroeconomics " +
			"high_school_microeconomics high_school_psychology human_sexuality professional_psychology public_relations " +
			"security_studies sociology us_foreign_policy",
		Other: "business_ethics clinical_knowledge college_medicine global_facts human_aging management marketing medical_genetics " +
			"miscellaneous nutrition professional_accounting professional_medicine virology",
	} {
		for _, s := range strings.Fields(subjects) {
			m[s] = cat
		}
	}
	return m
}()

// Category returns the MMLU category of a subject, named as in the
// original layout's file names or as a JSONL file might name it ("Formal
// Logic": subjectKey); a subject outside MMLU's 57 is "other".
func Category(subject string) string {
	if c, ok := mmluCategory[subjectKey(subject)]; ok {
		return c
	}
	return Other
}

// Letters are the answer letters.
var Letters = [4]string{"A", "B", "C", "D"}

// MMLUPrompt is the 5-shot prompt of q, exactly as lm-eval's default mmlu
// task builds it (no chat template): the subject header with underscores
// as single spaces, the shots in order, each with its answer, then q
// ending in "Answer:".
func MMLUPrompt(subject string, shots []MMLUQuestion, q MMLUQuestion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The following are multiple choice questions (with answers) about %s.\n\n", strings.Join(strings.Split(subject, "_"), " "))
	for _, s := range shots {
		writeMMLUQuestion(&b, s)
		fmt.Fprintf(&b, " %s\n\n", Letters[s.Answer])
	}
	writeMMLUQuestion(&b, q)
	return b.String()
}

func writeMMLUQuestion(b *strings.Builder, q MMLUQuestion) {
	b.WriteString(strings.TrimSpace(q.Question))
	for i, c := range q.Choices {
		fmt.Fprintf(b, "\n%s. %s", Letters[i], c)
	}
	b.WriteString("\nAnswer:")
}

// MMLUTopLogprobs is how many top logprobs the fallback asks for: 5 is
// OpenAI's limit for completions, within vLLM's 20.
const MMLUTopLogprobs = 5

// LetterScores reads the four answers' logprobs from one generated
// token's top_logprobs (keys are token texts): " A" as it follows
// "Answer:", else "A", "▁A" or "ĠA" (tokenizers that show the space).
// A letter in none is −Inf.
func LetterScores(top map[string]float64) [4]float64 {
	var out [4]float64
	for i, l := range Letters {
		out[i] = math.Inf(-1)
		if v, ok := top[" "+l]; ok {
			out[i] = v
			continue
		}
		for _, k := range []string{l, "\u2581" + l, "\u0120" + l} {
			if v, ok := top[k]; ok {
				out[i] = math.Max(out[i], v)
			}
		}
	}
	return out
}

// Argmax returns the index of the largest score, the first on a tie (as
// numpy), or −1 when all are −Inf.
func Argmax(scores [4]float64) int {
	best := -1
	for i, s := range scores {
		if !math.IsInf(s, -1) && (best < 0 || s > scores[best]) {
			best = i
		}
	}
	return best
}

// subjectMetric is the name of a subject's accuracy: acc_subject_<subject>,
// the subject as in the original layout's file names (abstract_algebra).
func subjectMetric(subject string) string {
	return schema.SubjectMetricPrefix + subjectKey(subject)
}

// subjectKey is a subject as the original layout's file names spell it:
// a subject named in a JSONL or CSV file is lowercased and every run of
// characters other than a–z, 0–9 and "_" becomes one "_" ("Formal Logic":
// formal_logic), so its metric name stays one a gate threshold can write.
func subjectKey(subject string) string {
	var b strings.Builder
	gap := false
	for _, c := range strings.ToLower(subject) {
		if c == '_' || ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if gap {
				b.WriteByte('_')
			}
			b.WriteRune(c)
			gap = false
			continue
		}
		gap = b.Len() > 0
	}
	return b.String()
}

// mmluTally counts right answers and questions per metric: acc (every
// question), acc_<category> and acc_subject_<subject> (subjectMetric).
type mmluTally struct {
	Right, Total map[string]int
}

func (t *mmluTally) add(subject string, right bool) {
	if t.Right == nil {
		t.Right, t.Total = map[string]int{}, map[string]int{}
	}
	for _, k := range []string{"acc", "acc_" + Category(subject), subjectMetric(subject)} {
		t.Total[k]++
		if right {
			t.Right[k]++
		}
	}
}

// metrics are acc (micro-averaged over every question), acc_<category> and
// acc_subject_<subject>, each the fraction of its questions answered right.
// A category or subject with no questions has no metric rather than a
// made-up one.
func (t *mmluTally) metrics() map[string]float64 {
	m := make(map[string]float64, len(t.Total))
	for k, n := range t.Total {
		m[k] = float64(t.Right[k]) / float64(n)
	}
	return m
}

// MMLU scores each test question 5-shot by the log-likelihood of " A",
// " B", " C", " D" after its prompt (MMLUPrompt), from echo: for each
// letter, the sum of the prompt logprobs past the context's own tokens
// (the context's usage.prompt_tokens, from a plain request of it alone).
// When the echo probe fails, each question is scored from the
// top_logprobs of one generated token instead (LetterScores; method
// top_logprobs) and the echo failure stays in the result. The metrics are
// accuracy overall, per category and per subject (mmluTally.metrics).
// Config.Limit caps the questions per subject (default: all).
func MMLU(ctx context.Context, r *Runner, set *MMLUSet) schema.EvalResult {
	const name = "mmlu"
	type item struct {
		subject string
		prompt  string
		answer  int
	}
	var items []item
	for _, sub := range set.Subjects {
		test := sub.Test
		if n := r.limit(0); n > 0 && n < len(test) {
			test = test[:n]
		}
		for _, q := range test {
			items = append(items, item{sub.Name, MMLUPrompt(sub.Name, sub.Shots, q), q.Answer})
		}
	}
	_, echoFail := r.Probe(ctx)
	if KindOf(echoFail) == Interrupted {
		return noScore(name, MethodEcho, echoFail)
	}
	method, score := MethodEcho, r.mmluByEcho
	if echoFail != nil {
		method, score = MethodTopLogprobs, r.mmluByTopLogprobs
	}
	var tally mmluTally
	var mu sync.Mutex
	found := 0
	r.cfg.Progress.begin(name, len(items))
	f := r.forEach(ctx, len(items), func(ctx context.Context, i int) *schema.EvalFailure {
		scores, f := score(ctx, i, items[i].prompt)
		if f != nil {
			return f
		}
		pred := Argmax(scores)
		mu.Lock()
		defer mu.Unlock()
		if pred >= 0 {
			found++
		}
		tally.add(items[i].subject, pred == items[i].answer)
		return nil
	})
	switch {
	case f != nil && echoFail != nil && KindOf(f) != Interrupted:
		// The echo failure is why the eval is down to the fallback; say both.
		ef := *echoFail
		ef.Detail += fmt.Sprintf("; the top_logprobs fallback failed too: %s: %s", f.Kind, f.Detail)
		return noScore(name, method, &ef)
	case f != nil:
		return noScore(name, method, f)
	case found == 0 && len(items) > 0:
		ef := *echoFail
		ef.Detail += fmt.Sprintf("; the top_logprobs fallback found no answer letter among the top %d tokens of any question", MMLUTopLogprobs)
		return noScore(name, method, &ef)
	}
	return schema.EvalResult{Name: name, Status: StatusOK, Method: method, Metrics: tally.metrics(), N: len(items), Failure: echoFail}
}

// mmluByEcho returns the four letters' log-likelihoods after prompt.
func (r *Runner) mmluByEcho(ctx context.Context, i int, prompt string) ([4]float64, *schema.EvalFailure) {
	var out [4]float64
	s := r.sender(i)
	ctxReq := map[string]any{"model": r.model, "prompt": prompt, "max_tokens": 1, "temperature": 0}
	resp, c, f := s.complete(ctx, ctxReq)
	if f != nil {
		return out, f
	}
	if c.Usage == nil || c.Usage.PromptTokens <= 0 {
		return out, newFailure(EchoMisaligned, resp.Status, resp.Body, shape(ctxReq), "no usage.prompt_tokens: the context's length is unknown")
	}
	ctxLen := c.Usage.PromptTokens
	for k, l := range Letters {
		req := EchoRequest(r.model, prompt+" "+l)
		e, f := s.echo(ctx, r.model, req)
		if f != nil {
			return out, f
		}
		if e.PromptTokens <= ctxLen {
			return out, newFailure(EchoMisaligned, http.StatusOK, nil, shape(req),
				fmt.Sprintf("usage.prompt_tokens %d with the answer, %d without: the answer has no token", e.PromptTokens, ctxLen))
		}
		out[k] = sum(e.Logprobs[ctxLen:])
	}
	return out, nil
}

// mmluByTopLogprobs returns the four letters' logprobs as the first
// generated token after prompt.
func (r *Runner) mmluByTopLogprobs(ctx context.Context, i int, prompt string) ([4]float64, *schema.EvalFailure) {
	var out [4]float64
	req := map[string]any{"model": r.model, "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": MMLUTopLogprobs}
	resp, c, f := r.sender(i).complete(ctx, req)
	if f != nil {
		return out, f
	}
	lp := c.Choices[0].Logprobs
	if lp == nil || len(lp.TopLogprobs) == 0 || lp.TopLogprobs[len(lp.TopLogprobs)-1] == nil {
		return out, newFailure(LogprobsMissing, resp.Status, resp.Body, shape(req), "no top_logprobs for the generated token")
	}
	// The last entry is the generated token's, whether or not the server echoed.
	return LetterScores(lp.TopLogprobs[len(lp.TopLogprobs)-1]), nil
}
