package evals

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
//
// When the echo probe fails, the first question finds a route that works,
// and every question is scored by it (the echo failure stays in the
// result, with what each route tried before said in its detail):
//
//   - top_logprobs: the top_logprobs of one token generated by
//     /v1/completions (LetterScores);
//   - chat-top-logprobs: the top_logprobs of the first token a chat answer
//     generates (llama.cpp, which gives no logprobs on /v1/completions);
//   - chat-greedy: the first answer letter a greedy chat answer names
//     (AnswerLetter), for an endpoint that gives no logprobs at all, or a
//     thinking model, whose first token is reasoning.
//
// The chat routes read the answer's content only, never a thinking model's
// reasoning; no chat_template_kwargs are sent (the OpenAI API refuses
// unknown fields) but those of Config.Extra, so a thinking model thinks
// unless the extra body says {"chat_template_kwargs": {"enable_thinking":
// false}}, and chat-greedy gives it Config.ReasoningTokens to answer in
// (mmluByChatGreedy).
//
// The logprob routes ask the top MMLUTopLogprobs (completions) or
// chatTopLogprobs (chat); a server refusing that many with a stated maximum
// of at least four (TGI's --max-top-n-tokens, 5 by default; vLLM's
// --max-logprobs) is asked that maximum instead, by every question
// (sender.postOK, mmluTop), and the result's failure detail says so.
//
// A route is left for the next when it lacks what MMLU needs (routeLacks).
// The route is chosen on the first question, which must be answered; after
// it, a question that gets no answer (no letter among the top logprobs or
// in the greedy content, an answer that is reasoning only) is scored wrong
// and counted in NoAnswerMetric, and on chat-top-logprobs a question whose
// first token is no letter (reasoning, a "\n") is asked by chat-greedy
// alone. When more than half the questions get no answer, MMLU fails, the
// count in the detail: bad_response where most were reasoning only (a
// budget too small: Config.ReasoningTokens), else the echo failure's kind.
// The metrics are accuracy overall, per category and per subject
// (mmluTally.metrics), and no_answer. Config.Limit caps the questions per
// subject (default: all).
func MMLU(ctx context.Context, r *Runner, set *MMLUSet) schema.EvalResult {
	res, _ := mmlu(ctx, r, set)
	return r.finish(res)
}

// mmlu is MMLU with its items: one per question, ID subject/index
// (mmluItem.id), the letter predicted ("" for no answer), the answer's,
// and the four letters' scores where all are finite.
func mmlu(ctx context.Context, r *Runner, set *MMLUSet) (schema.EvalResult, []schema.EvalItem) {
	const name = "mmlu"
	items := r.mmluItems(set)
	_, echoFail := r.probeRaw(ctx)
	if KindOf(echoFail) == Interrupted {
		return noScore(name, MethodEcho, echoFail), nil
	}
	if len(items) == 0 {
		return noScore(name, MethodEcho, newFailure(BadResponse, 0, nil, nil, "no question to score")), nil
	}
	routes := []route[[4]float64]{{method: MethodEcho, ask: r.mmluByEcho}}
	tops := map[string]*mmluTop{MethodTopLogprobs: {want: MMLUTopLogprobs}, MethodChatTopLogprobs: {want: chatTopLogprobs}}
	if echoFail != nil {
		// A copy: choosing the route says what each route tried in its detail.
		ef := *echoFail
		echoFail = &ef
		routes = []route[[4]float64]{
			{method: MethodTopLogprobs, ask: r.mmluByTopLogprobs(tops[MethodTopLogprobs])},
			{method: MethodChatTopLogprobs, ask: r.mmluByChatTopLogprobs(tops[MethodChatTopLogprobs])},
			{method: MethodChatGreedy, ask: r.mmluByChatGreedy},
		}
	}
	r.cfg.Progress.begin(name, len(items))
	a := mmluAnswers{items: make([]schema.EvalItem, len(items))}
	rt, f := askEach(ctx, r, len(items), func(i int) string { return items[i].prompt }, echoFail,
		func(ctx context.Context, method string, i int, scores [4]float64, unanswered *schema.EvalFailure) *schema.EvalFailure {
			return r.mmluScore(ctx, &a, method, i, items[i], scores, unanswered)
		}, routes...)
	switch {
	case f != nil:
		return noScore(name, rt.method, f), nil
	case 2*a.noAnswer > len(items) && echoFail != nil:
		// Most questions got no answer: no accuracy is made of the rest.
		return noScore(name, rt.method, r.mmluNoAnswer(rt.method, tops[rt.method].ask(), len(items), &a, echoFail)), nil
	}
	if t := tops[rt.method]; t != nil && t.ask() < t.want {
		echoFail.Detail = joinDetail(echoFail.Detail, fmt.Sprintf("%s asked the top %d logprobs, the server's stated maximum, having been refused %d", rt.method, t.ask(), t.want))
	}
	metrics := a.tally.metrics()
	metrics[NoAnswerMetric] = float64(a.noAnswer)
	return schema.EvalResult{Name: name, Status: StatusOK, Method: rt.method, Metrics: metrics, N: len(items), Failure: echoFail}, a.items
}

// mmluItem is one test question to score: its subject, its index in the
// subject's test split, its 5-shot prompt (MMLUPrompt) and the index of
// its answer.
type mmluItem struct {
	subject string
	index   int
	prompt  string
	answer  int
}

// id is the question's item ID: subject/index, the same in every run.
func (it mmluItem) id() string { return it.subject + "/" + strconv.Itoa(it.index) }

// mmluItems are set's test questions to score, in subject order,
// Config.Limit of each subject (default: all).
func (r *Runner) mmluItems(set *MMLUSet) []mmluItem {
	var items []mmluItem
	for _, sub := range set.Subjects {
		test := sub.Test
		if n := r.limit(0); n > 0 && n < len(test) {
			test = test[:n]
		}
		for k, q := range test {
			items = append(items, mmluItem{sub.Name, k, MMLUPrompt(sub.Name, sub.Shots, q), q.Answer})
		}
	}
	return items
}

// mmluAnswers is what the questions got: the tally of right answers, how
// many got no answer, how many of those were reasoning only, the last
// such answer's failure, and each question's item, by its index.
type mmluAnswers struct {
	mu                      sync.Mutex
	tally                   mmluTally
	noAnswer, reasoningOnly int
	lastUnanswered          *schema.EvalFailure
	items                   []schema.EvalItem
}

// mmluScore scores question i (it) into a from the scores (or unanswered)
// its route's method gave. On chat-top-logprobs, a question whose first
// token is no answer letter is asked by chat-greedy; that request's
// failure is returned.
func (r *Runner) mmluScore(ctx context.Context, a *mmluAnswers, method string, i int, it mmluItem, scores [4]float64, unanswered *schema.EvalFailure) *schema.EvalFailure {
	if method == MethodChatTopLogprobs && (unanswered != nil || Argmax(scores) < 0) {
		// This question's first token is no answer letter (reasoning, a
		// "\n", a word): its greedy answer's content is read instead.
		var f *schema.EvalFailure
		if scores, unanswered, f = r.mmluByChatGreedy(ctx, i, it.prompt); f != nil {
			return f
		}
	}
	pred := -1
	if unanswered == nil {
		pred = Argmax(scores)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if pred < 0 {
		a.noAnswer++
	}
	if unanswered != nil {
		a.reasoningOnly++
		a.lastUnanswered = unanswered
	}
	a.tally.add(it.subject, pred == it.answer)
	letter := ""
	if pred >= 0 {
		letter = Letters[pred]
	}
	var lps []float64
	if unanswered == nil {
		lps = finiteLogprobs(scores[:])
	}
	a.items[i] = accuracyItem("mmlu", it.id(), letter, Letters[it.answer], pred == it.answer, lps)
	return nil
}

// mmluNoAnswer is the failure of a fallback (method, asking the top top
// logprobs where it asks any) that gave no answer to most of n questions,
// the count in its detail: the last reasoning-only answer's where most were
// reasoning only (a thinking model out of budget), else echoFail's.
func (r *Runner) mmluNoAnswer(method string, top, n int, a *mmluAnswers, echoFail *schema.EvalFailure) *schema.EvalFailure {
	where := fmt.Sprintf("among the top %d tokens", top)
	switch method {
	case MethodChatTopLogprobs:
		where = fmt.Sprintf("among the top %d first tokens of the chat answer nor in its greedy answer", top)
	case MethodChatGreedy:
		where = "in the greedy chat answer"
	}
	count := fmt.Sprintf("the %s fallback gave no answer to %d of %d questions: no answer letter %s of %d",
		method, a.noAnswer, n, where, a.noAnswer-a.reasoningOnly)
	if a.reasoningOnly > 0 {
		count += fmt.Sprintf(", reasoning only within max_tokens %d in %d", r.cfg.ReasoningTokens, a.reasoningOnly)
	}
	if 2*a.reasoningOnly > a.noAnswer {
		// A thinking model out of budget: failed, by an answer that says so.
		lf := *a.lastUnanswered
		lf.Detail = joinDetail(count, joinDetail(lf.Detail, fmt.Sprintf("taken because of %s: %s", echoFail.Kind, echoFail.Detail)))
		return &lf
	}
	ef := *echoFail
	ef.Detail = joinDetail(ef.Detail, count)
	return &ef
}

// NoAnswerMetric names the count of questions that got no answer: MMLU's
// with no answer letter (none among the top logprobs, none in the greedy
// answer's content, or an answer that is reasoning only within
// Config.ReasoningTokens), TriviaQA's chat answers that are reasoning only.
// Each is scored wrong; when more than half the questions get none, the
// eval fails instead, the count in its failure's detail.
const NoAnswerMetric = "no_answer"

// mmluByEcho returns the four letters' log-likelihoods after prompt.
func (r *Runner) mmluByEcho(ctx context.Context, i int, prompt string) (_ [4]float64, unanswered, _ *schema.EvalFailure) {
	var out [4]float64
	s := r.sender(i)
	ctxReq := map[string]any{"model": r.model, "prompt": prompt, "max_tokens": 1, "temperature": 0}
	resp, c, f := s.complete(ctx, ctxReq)
	if f != nil {
		return out, nil, f
	}
	if c.Usage == nil || c.Usage.PromptTokens <= 0 {
		return out, nil, newFailure(EchoMisaligned, resp.Status, resp.Body, shape(ctxReq), "no usage.prompt_tokens: the context's length is unknown")
	}
	ctxLen := c.Usage.PromptTokens
	for k, l := range Letters {
		req := EchoRequest(r.model, prompt+" "+l)
		e, f := s.echo(ctx, r.model, req)
		if f != nil {
			return out, nil, f
		}
		if e.PromptTokens <= ctxLen {
			return out, nil, newFailure(EchoMisaligned, http.StatusOK, nil, shape(req),
				fmt.Sprintf("usage.prompt_tokens %d with the answer, %d without: the answer has no token", e.PromptTokens, ctxLen))
		}
		out[k] = sum(e.Logprobs[ctxLen:])
	}
	return out, nil, nil
}

// mmluTop is how many top logprobs one of MMLU's logprob routes asks for:
// want, until a server refuses it stating a lower maximum (sender.postOK
// asks that one again), then that maximum, for every later question.
type mmluTop struct {
	want int
	// capped is the server's stated maximum (0: none met).
	capped atomic.Int64
}

// ask is the count to ask for.
func (t *mmluTop) ask() int {
	if t == nil {
		return 0
	}
	if n := t.capped.Load(); n > 0 {
		return int(n)
	}
	return t.want
}

// sent notes the count req asked for field, once answered: below ask, it is
// the server's cap.
func (t *mmluTop) sent(req map[string]any, field string) {
	if n, _ := req[field].(int); n > 0 && n < t.ask() {
		t.capped.Store(int64(n))
	}
}

// mmluByTopLogprobs asks the four letters' logprobs as the first generated
// token after prompt, the top top.ask() of them.
func (r *Runner) mmluByTopLogprobs(top *mmluTop) asker[[4]float64] {
	return func(ctx context.Context, i int, prompt string) (_ [4]float64, unanswered, _ *schema.EvalFailure) {
		var out [4]float64
		req := map[string]any{"model": r.model, "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": top.ask()}
		resp, c, f := r.sender(i).complete(ctx, req)
		if f != nil {
			return out, nil, f
		}
		top.sent(req, "logprobs")
		lp := c.Choices[0].Logprobs
		if lp == nil || len(lp.TopLogprobs) == 0 || lp.TopLogprobs[len(lp.TopLogprobs)-1] == nil {
			return out, nil, newFailure(LogprobsMissing, resp.Status, resp.Body, shape(req), "no top_logprobs for the generated token")
		}
		// The last entry is the generated token's, whether or not the server echoed.
		return LetterScores(lp.TopLogprobs[len(lp.TopLogprobs)-1]), nil, nil
	}
}

// mmluGreedyTokens bounds a greedy chat answer: enough for "B", "B.",
// "(B) 4" or "The answer is B", not for an essay.
const mmluGreedyTokens = 16

// mmluByChatTopLogprobs asks the four letters' logprobs as the first token
// of a greedy chat answer to prompt, the top top.ask() of them. Only an
// answer whose first token is its content's is read: one with reasoning (a
// thinking model: vLLM, SGLang and llama.cpp put it in reasoning_content,
// some gateways in reasoning, a server that splits nothing leaves "<think>"
// in content: splitThink) or with no content starts with the reasoning or a
// blank, and the top logprobs of that token say nothing of the answer (a
// reasoning that starts "A question…" would score the letter A for every
// question). That answer is unanswered, LogprobsMissing: on the question
// that chooses the route, MMLU moves to chat-greedy, which reads the
// content; on a later one, that question alone is asked by chat-greedy.
func (r *Runner) mmluByChatTopLogprobs(top *mmluTop) asker[[4]float64] {
	return func(ctx context.Context, i int, prompt string) (_ [4]float64, unanswered, _ *schema.EvalFailure) {
		var out [4]float64
		req := chatRequest(r.model, prompt, map[string]any{"max_tokens": 1, "temperature": 0, "logprobs": true, "top_logprobs": top.ask()})
		resp, c, f := r.sender(i).chat(ctx, req)
		if f != nil {
			return out, nil, f
		}
		top.sent(req, "top_logprobs")
		lp := c.Choices[0].Logprobs
		if lp == nil || len(lp.Content) == 0 || len(lp.Content[0].TopLogprobs) == 0 {
			return out, nil, newFailure(LogprobsMissing, resp.Status, resp.Body, shape(req), "no top_logprobs for the chat answer's first token")
		}
		if c.reasoning() != "" || strings.TrimSpace(c.content()) == "" {
			return out, newFailure(LogprobsMissing, resp.Status, resp.Body, shape(req),
				"the chat answer's first token is reasoning or blank, not content (a thinking model): its top_logprobs are not the answer's"), nil
		}
		return LetterScores(lp.Content[0].Top()), nil, nil
	}
}

// mmluByChatGreedy scores the letter a greedy chat answer to prompt names
// in its content (AnswerLetter; never in its reasoning, which names letters
// on its way) 0 and the others −Inf; content naming none scores all −Inf.
// A thinking model is given room to answer, and an answer that is
// reasoning only is unanswered (Runner.chatAnswer).
func (r *Runner) mmluByChatGreedy(ctx context.Context, i int, prompt string) (_ [4]float64, unanswered, _ *schema.EvalFailure) {
	out := [4]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	content, unanswered, f := r.chatAnswer(ctx, i, prompt, map[string]any{"max_tokens": mmluGreedyTokens, "temperature": 0},
		func(content string) bool { return AnswerLetter(content) >= 0 })
	if f != nil || unanswered != nil {
		return out, unanswered, f
	}
	if k := AnswerLetter(content); k >= 0 {
		out[k] = 0
	}
	return out, nil, nil
}

// AnswerLetter returns the index of the first answer letter A–D that s
// names, or −1: an upper-case A, B, C or D standing alone, with neither a
// letter nor a digit on either side ("B", "B.", "(C)", "Answer: D", "The
// answer is A"). The article in "A good answer is C" is taken for A: a
// greedy answer is read by its first letter, never guessed at.
func AnswerLetter(s string) int {
	word := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 'A' || c > 'D' || (i > 0 && word(s[i-1])) || (i+1 < len(s) && word(s[i+1])) {
			continue
		}
		return int(c - 'A')
	}
	return -1
}
