// Package evals measures the quality of the model behind an endpoint: token
// perplexity over documents (ppl), perplexity of the model's own long
// generations (long-ppl), MMLU 5-shot and TriviaQA 5-shot. It also holds the
// echo-logprob probe and its failure kinds, the data set loaders and small
// embedded sample sets, so that every eval runs on a fresh machine.
//
// An eval that cannot be scored gives no metric, never a wrong one: its
// result carries one failure kind, the HTTP status, the first 200 bytes of
// the answer (redacted of the endpoint's secrets before the cut, so a secret
// straddling it leaks no prefix) and the shape of the request that failed.
//
// Where /v1/completions lacks what an eval needs (llama.cpp's server, a
// chat-only hosted provider), the eval moves to /v1/chat/completions if it
// can be computed there, and its result's Method names the route that gave
// the number (see the Method constants for the names and the order in which
// routes are tried). ppl cannot: it needs prompt logprobs, which chat never
// gives. Where a route refuses ignore_eos (the OpenAI API), long-ppl
// generates without it and its method says so (the suffix UntilEOS), since
// generations that may stop at EOS are not the measurement of ones run to
// GenTokens. On chat, an answer is read from its content, never from a
// thinking model's reasoning (reasoning_content or reasoning, and a leading
// <think>…</think> block, or [THINK]…[/THINK] or ◁think▷…◁/think▷, that a
// server left in content: an unterminated one is reasoning only). The route
// is chosen on the first question, and an eval fails when that question
// gets no answer; a later question that gets none (reasoning only within
// Config.ReasoningTokens, no answer letter) is scored wrong and counted in
// the metric no_answer (NoAnswerMetric), and an eval where more than half
// the questions get none fails with that count. Config.Extra's fields go in
// every generation request (--extra-body): {"chat_template_kwargs":
// {"enable_thinking": false}} has a hybrid reasoning model on vLLM or
// SGLang answer without thinking.
package evals

import (
	"strings"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// Kind names why an eval gave no score. Exactly one kind is given.
type Kind string

// The echo failure kinds: the endpoint cannot give prompt logprobs, so an
// eval that needs them is unsupported there.
const (
	// EchoRejected is a 4xx answer to an echo request (SGLang: "max_tokens
	// must be positive"; OpenAI: "Setting 'echo' and 'logprobs' at the same
	// time is not supported").
	EchoRejected Kind = "echo_rejected"
	// EchoServerError is a 5xx answer to an echo request while a plain
	// generation to the same endpoint works (a hosted endpoint answered
	// "ValidationError.__new__() missing 1 required positional argument:
	// 'line_errors'"; llama.cpp "Unsupported param: echo").
	EchoServerError Kind = "echo_server_error"
	// EchoIgnored is a 200 whose logprobs cover only the generated tokens:
	// llama.cpp's server, which lm-eval then scored at exactly chance.
	EchoIgnored Kind = "echo_ignored"
	// LogprobsMissing is a 200 with no logprobs at all.
	LogprobsMissing Kind = "logprobs_missing"
	// EchoMisaligned is logprobs whose lengths or offsets do not match
	// usage.prompt_tokens (vLLM #39556 leaked a token), or whose first prompt
	// entry is not null (a shifted list).
	EchoMisaligned Kind = "echo_misaligned"
	// EchoImplausible is logprobs no model gives: positive, all zero, clamped
	// to −9999 on real text, or one distribution repeated at every position
	// (a backend that returned one logits row for the whole prompt).
	EchoImplausible Kind = "echo_implausible"
	// CompletionsMissing is a 404 or 405 from /v1/completions while
	// /v1/chat/completions answers: a chat-only endpoint (many hosted
	// providers), which serves no prompt logprobs at all, since chat gives
	// logprobs of generated tokens only.
	CompletionsMissing Kind = "completions_missing"
)

// The other kinds: something else stopped the eval (status failed).
const (
	// HTTPError is an error status that is not an echo failure: a 5xx while
	// plain generation fails too, a 429, or any error on a request without echo.
	HTTPError Kind = "http_error"
	// Transport is a request that got no answer: refused, reset or timed out
	// (after retries, for the first two).
	Transport Kind = "transport"
	// BadResponse is a 200 whose body is not a completion.
	BadResponse Kind = "bad_response"
	// Interrupted is an eval cut off by the user.
	Interrupted Kind = "interrupted"
)

// EchoKinds are the echo failure kinds, as the probe tells them apart.
var EchoKinds = []Kind{EchoRejected, EchoServerError, EchoIgnored, LogprobsMissing, EchoMisaligned, EchoImplausible, CompletionsMissing}

// Unsupported reports whether k says the endpoint cannot give what an eval
// needs (status unsupported) rather than that something went wrong (failed).
func (k Kind) Unsupported() bool {
	for _, e := range EchoKinds {
		if k == e {
			return true
		}
	}
	return false
}

// Eval statuses, as reports record them.
const (
	StatusOK          = "ok"
	StatusUnsupported = "unsupported"
	StatusFailed      = "failed"
)

// Result methods: how an eval got its scores, and by which route. A result's
// method is part of what its number means: reports' compare and gate mark
// (compare) or fail (gate) a comparison of two numbers got by different
// methods, since an MMLU accuracy by greedy chat answers is not the same
// measurement as one by echo log-likelihoods.
//
// Each eval tries its routes in this order on its first item and reports
// the first that gives a score (MMLU's result keeps the echo probe's
// failure, as why; where no route gives one, the failure says in its
// detail what each route got):
//
//	ppl       echo, echo-tokenize, echo-text (all /v1/completions echo; the
//	          chat route gives no prompt logprobs, so an endpoint without echo
//	          leaves ppl unsupported, with its echo failure kind)
//	long-ppl  generate (/v1/completions logprobs), then chat-logprobs;
//	          either with the suffix -until-eos (UntilEOS) where the route
//	          refuses ignore_eos, so generations may stop before GenTokens
//	mmlu      echo, then top_logprobs (/v1/completions), then
//	          chat-top-logprobs, then chat-greedy
//	triviaqa  generate (/v1/completions), then chat-generate
const (
	// MethodEcho scores prompt tokens from echo logprobs, token ids from the
	// echo itself (return_tokens_as_token_ids).
	MethodEcho = "echo"
	// MethodEchoTokenize is MethodEcho with token ids from the server's /tokenize.
	MethodEchoTokenize = "echo-tokenize"
	// MethodEchoText is ppl scored over text pieces, for endpoints that give no
	// token ids: each piece's first token is context only.
	MethodEchoText = "echo-text"
	// MethodTopLogprobs is MMLU scored from the top_logprobs of one generated
	// token of /v1/completions.
	MethodTopLogprobs = "top_logprobs"
	// MethodGenerate is a /v1/completions generation scored on its text or
	// its own logprobs.
	MethodGenerate = "generate"
	// MethodChatLogprobs is long-ppl from the logprobs of the tokens a
	// /v1/chat/completions generation sampled (the prompt is the document's
	// opening as one user message, under the server's chat template).
	MethodChatLogprobs = "chat-logprobs"
	// UntilEOS ends the method of a long-ppl whose route refused
	// ignore_eos (the OpenAI API): it generated without it, so each
	// generation may have stopped at the model's EOS before GenTokens (its
	// tokens metric says how many were scored). Its ppl is over shorter,
	// EOS-ended texts: not the same measurement as one run to GenTokens.
	UntilEOS = "-until-eos"
	// MethodChatTopLogprobs is MMLU scored from the top_logprobs of the first
	// token a chat answer generates (the 5-shot prompt as one user message).
	MethodChatTopLogprobs = "chat-top-logprobs"
	// MethodChatGreedy is MMLU scored by the first answer letter A–D that a
	// greedy chat answer names, for endpoints that give no logprobs at all.
	MethodChatGreedy = "chat-greedy"
	// MethodChatGenerate is TriviaQA asked through chat, greedy, scored on
	// the answer's text.
	MethodChatGenerate = "chat-generate"
)

// KindOf returns f's kind.
func KindOf(f *schema.EvalFailure) Kind {
	if f == nil {
		return ""
	}
	return Kind(f.Kind)
}

// failureWindow is how much of an answer's body a failure holds until it
// leaves the package (finishFailure): enough that a secret starting before
// the BodyLimit cut is there whole, even JSON-escaped, so that it is
// redacted before the cut rather than leaking its first bytes.
const failureWindow = 16 << 10

// newFailure builds a failure holding up to failureWindow bytes of body,
// raw: every failure an eval returns passes finishFailure, which redacts
// that window and only then clips it to endpoints.BodyLimit bytes. One more
// byte is kept to say that the body went on.
func newFailure(kind Kind, status int, body []byte, req map[string]any, detail string) *schema.EvalFailure {
	if len(body) > failureWindow+1 {
		body = body[:failureWindow+1]
	}
	return &schema.EvalFailure{Kind: string(kind), HTTPStatus: status, Body: string(body), Request: req, Detail: detail}
}

// finishFailure returns f as it may leave the package: its body redacted
// of ep's secrets (all of them, however short: a 2xx body comes from
// endpoints.Client.Post redacted only of those of 8 bytes or more), then
// clipped to endpoints.BodyLimit bytes (ClipBody, which also blanks a cut-off
// start of a secret at the window's end), made valid UTF-8; its detail
// redacted. Redacting after the cut would leak the first bytes of a secret
// straddling it. ep may be nil (no secrets known): the body is only clipped.
// Applying it twice changes nothing more.
func finishFailure(ep *endpoints.Endpoint, f *schema.EvalFailure) *schema.EvalFailure {
	if f == nil {
		return nil
	}
	out := *f
	out.Body = strings.ToValidUTF8(string(ep.ClipBody([]byte(f.Body), false)), "?")
	if ep != nil {
		out.Detail = ep.Redact(f.Detail)
	}
	return &out
}

// finish is res as an eval returns it: its failure finished (finishFailure)
// with the Runner's endpoint.
func (r *Runner) finish(res schema.EvalResult) schema.EvalResult {
	res.Failure = finishFailure(r.cfg.Endpoint, res.Failure)
	return res
}

// noScore is the result of an eval stopped by f: status unsupported for an
// echo kind, failed otherwise, and no metric.
func noScore(name, method string, f *schema.EvalFailure) schema.EvalResult {
	st := StatusFailed
	if KindOf(f).Unsupported() {
		st = StatusUnsupported
	}
	return schema.EvalResult{Name: name, Status: st, Method: method, Failure: f}
}
