package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/glmbench/glmbench/reports/schema"
)

// How the ppl eval gets token ids, tried in this order:
//
//  1. idsByEcho: an echo of the text with return_tokens_as_token_ids (vLLM,
//     the built-in engine) names every token "token_id:N". The echo is the
//     server's own tokenization of the prompt, prefix tokens (BOS) included,
//     and it already scores the first window.
//  2. idsByRoute: the server's /v1/tokenize or /tokenize (vLLM, SGLang), with
//     add_special_tokens as a text prompt gets it.
//  3. textPieces: neither works; each document is scored in text pieces that
//     fit a window, each piece's first token context only (MethodEchoText).
//
// Modes 1 and 2 also need the server to take token-id prompts verbatim
// (usage.prompt_tokens equal to the ids sent), which is checked once.
type tokMode int

const (
	idsByEcho tokMode = iota
	idsByRoute
	textPieces
)

// tokSource is how this endpoint tokenizes, found once per Runner.
type tokSource struct {
	mode tokMode
	// route sends /tokenize requests (idsByRoute), at path.
	route sender
	path  string
	// prefix is how many ids the server puts before a text prompt's own
	// (a BOS): the common prefix of two texts' echoed ids that start with
	// different letters. Only idsByEcho sets and reads it, to drop the
	// prefix from the second and later pieces of a long text; /tokenize
	// takes a whole document at once.
	prefix int
	// bytesPerToken of the probe text, for sizing text pieces.
	bytesPerToken float64
}

// Texts whose tokenizations can share only the server's own prefix tokens:
// they start with different letters.
const (
	prefixTextA = "Paris is the capital of France."
	prefixTextB = "London is the capital of England."
)

// tokenizer finds how to tokenize, once. Its failure is only what stops
// every mode (transport, interruption); anything else falls to textPieces.
func (r *Runner) tokenizer(ctx context.Context) (*tokSource, *schema.EvalFailure) {
	r.tokOnce.Do(func() { r.tok, r.tokFail = r.findTokenizer(ctx) })
	return r.tok, r.tokFail
}

func (r *Runner) findTokenizer(ctx context.Context) (*tokSource, *schema.EvalFailure) {
	probe, f := r.probeRaw(ctx)
	if f != nil {
		return nil, f
	}
	ts := &tokSource{mode: textPieces, bytesPerToken: float64(len(ProbeText)) / float64(probe.Echo.PromptTokens)}
	s := r.sender(0)
	fatal := func(f *schema.EvalFailure) bool {
		return f != nil && (KindOf(f) == Interrupted || KindOf(f) == Transport)
	}

	// 1. ids from the echo itself.
	a, fa := s.echo(ctx, r.model, echoIDsRequest(r.model, prefixTextA))
	if fatal(fa) {
		return nil, fa
	}
	if fa == nil && a.IDs != nil {
		b, fb := s.echo(ctx, r.model, echoIDsRequest(r.model, prefixTextB))
		if fatal(fb) {
			return nil, fb
		}
		if fb == nil && b.IDs != nil {
			ok, f := r.takesIDs(ctx, a.IDs)
			if f != nil {
				return nil, f
			}
			if ok {
				ts.mode, ts.prefix = idsByEcho, commonPrefix(a.IDs, b.IDs)
				return ts, nil
			}
		}
	}

	// 2. ids from a /tokenize route.
	for _, route := range []struct {
		s    sender
		path string
	}{{s, "/tokenize"}, {r.rootSender(), "/tokenize"}} {
		ids, f := tokenizeRoute(ctx, route.s, route.path, r.model, ProbeText)
		if fatal(f) {
			return nil, f
		}
		if f != nil || len(ids) != probe.Echo.PromptTokens {
			continue // absent, or not the tokenization prompts get
		}
		ok, f := r.takesIDs(ctx, ids)
		if f != nil {
			return nil, f
		}
		if ok {
			ts.mode, ts.route, ts.path = idsByRoute, route.s, route.path
			return ts, nil
		}
	}
	return ts, nil
}

// takesIDs reports whether the server reads a token-id prompt verbatim: an
// echo of ids counts exactly those as usage.prompt_tokens. An error status
// means no; only an interruption or no answer is a failure.
func (r *Runner) takesIDs(ctx context.Context, ids []int32) (bool, *schema.EvalFailure) {
	e, f := r.sender(0).echo(ctx, r.model, EchoRequest(r.model, ids))
	switch {
	case f != nil && (KindOf(f) == Interrupted || KindOf(f) == Transport):
		return false, f
	case f != nil:
		return false, nil
	}
	return e.PromptTokens == len(ids), nil
}

func echoIDsRequest(model string, prompt any) map[string]any {
	req := EchoRequest(model, prompt)
	req["return_tokens_as_token_ids"] = true
	return req
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// tokenizeRoute asks a vLLM/SGLang-style /tokenize for text's ids, with the
// special tokens a text prompt gets.
func tokenizeRoute(ctx context.Context, s sender, path, model, text string) ([]int32, *schema.EvalFailure) {
	req := map[string]any{"model": model, "prompt": text, "add_special_tokens": true}
	resp, f := s.postOK(ctx, path, req)
	if f != nil {
		return nil, f
	}
	var v struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal(resp.Body, &v); err != nil || len(v.Tokens) == 0 {
		return nil, newFailure(BadResponse, resp.Status, resp.Body, shape(req), "no token ids in the answer")
	}
	return v.Tokens, nil
}

// pplTotals are the sums behind ppl's metrics.
type pplTotals struct {
	// LL is the summed log-likelihood of the scored tokens, in nats.
	LL float64
	// Tokens is the number of scored tokens; Words and Bytes those of the
	// scored documents' original text.
	Tokens, Words, Bytes int
	// Docs is the number of documents scored.
	Docs int
	// items are the scored documents, one each (docItem), in data set order.
	items []schema.EvalItem
}

// metrics are ppl's metrics: ppl = exp(nll_per_token), nll_per_token =
// −LL/tokens; word_perplexity = exp(−LL/words), byte_perplexity =
// exp(−LL/bytes), bits_per_byte = −LL/bytes/ln 2 (lm-eval's formulas).
func (t pplTotals) metrics() map[string]float64 {
	nll := -t.LL / float64(t.Tokens)
	return map[string]float64{
		"ppl": math.Exp(nll), "nll_per_token": nll, "tokens": float64(t.Tokens),
		"word_perplexity": math.Exp(-t.LL / float64(t.Words)),
		"byte_perplexity": math.Exp(-t.LL / float64(t.Bytes)),
		"bits_per_byte":   -t.LL / float64(t.Bytes) / math.Ln2,
	}
}

// Window is one ppl request over a document's ids: the prompt ids[Start:End]
// scores the positions From..End−1.
type Window struct{ Start, From, End int }

// Windows lays out a document of n token ids in lm-eval's disjoint rolling
// windows for a context budget of window tokens (lm-eval's max_length):
// the scored positions 1..n−1 go in blocks of window−2, and each block's
// prompt is the window−1 ids that end with it, so a full block carries one
// token of context and the last, shorter one as many as fit (lm-eval's
// make_disjoint_window). Position 0 is context only: it is the server's
// prefix token (BOS) where it adds one, else the text's first token.
func Windows(n, window int) []Window {
	span := window - 2
	var out []Window
	for lo := 1; lo < n; lo += span {
		hi := min(lo+span, n)
		out = append(out, Window{Start: max(0, hi-span-1), From: lo, End: hi})
	}
	return out
}

// docIDs is one document tokenized: its ids, and the logprobs of the
// leading ids the tokenization echo already scored (nil if none).
type docIDs struct {
	ids    []int32
	scored []float64
}

// pieces splits text at line ends (then spaces, then anywhere on a rune
// boundary) into pieces of at most size bytes.
func pieces(text string, size int) []string {
	var out []string
	for len(text) > size {
		cut := strings.LastIndexByte(text[:size], '\n') + 1
		if cut <= size/4 {
			cut = strings.LastIndexByte(text[:size], ' ') + 1
		}
		if cut <= size/4 {
			cut = size
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			if cut == 0 {
				cut = size
			}
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

// tokenizeDoc returns text's ids as the server tokenizes it as a prompt.
// Long texts go in pieces; the server's prefix ids are kept once, at the start.
func (r *Runner) tokenizeDoc(ctx context.Context, i int, ts *tokSource, text string) (*docIDs, *schema.EvalFailure) {
	if ts.mode == idsByRoute {
		ids, f := tokenizeRoute(ctx, ts.route, ts.path, r.model, text)
		if f != nil {
			return nil, f
		}
		return &docIDs{ids: ids}, nil
	}
	d := &docIDs{}
	for k, p := range pieces(text, r.cfg.TokenizeBytes) {
		req := echoIDsRequest(r.model, p)
		e, f := r.sender(i).echo(ctx, r.model, req)
		if f != nil {
			return nil, f
		}
		if e.IDs == nil {
			return nil, newFailure(EchoMisaligned, http.StatusOK, nil, shape(req), "tokens did not come as token_id:N, as they did for the same request before")
		}
		ids := e.IDs
		if k == 0 {
			d.scored = e.Logprobs
		} else {
			ids = ids[min(ts.prefix, len(ids)):]
		}
		d.ids = append(d.ids, ids...)
	}
	return d, nil
}

// PPL scores documents by echo: token log-likelihood in lm-eval's disjoint
// windows (see Windows) of Config.Window tokens, and the metrics of
// pplTotals. Documents of fewer than two tokens are skipped. Config.Limit
// caps the documents (default: all).
func PPL(ctx context.Context, r *Runner, docs *Docs) schema.EvalResult {
	res, _ := ppl(ctx, r, docs)
	return r.finish(res)
}

// ppl is PPL with its items: one per document scored (docItem).
func ppl(ctx context.Context, r *Runner, docs *Docs) (schema.EvalResult, []schema.EvalItem) {
	const name = "ppl"
	if _, f := r.probeRaw(ctx); f != nil {
		if KindOf(f).Unsupported() {
			// Say why no other route is tried: chat has no prompt logprobs.
			nf := *f
			nf.Detail = joinDetail(nf.Detail, "ppl needs the logprobs of prompt tokens, which only /v1/completions echo gives; "+
				"the chat route gives logprobs of generated tokens only, so ppl has no fallback")
			f = &nf
		}
		return noScore(name, MethodEcho, f), nil
	}
	ts, f := r.tokenizer(ctx)
	if f != nil {
		return noScore(name, MethodEcho, f), nil
	}
	list := docs.Docs
	if n := r.limit(0); n > 0 && n < len(list) {
		list = list[:n]
	}
	var tot pplTotals
	method := MethodEcho
	switch ts.mode {
	case idsByRoute:
		method = MethodEchoTokenize
		fallthrough
	case idsByEcho:
		tot, f = r.pplByIDs(ctx, ts, list)
	default:
		method = MethodEchoText
		tot, f = r.pplByText(ctx, ts, list)
	}
	if f != nil {
		return noScore(name, method, f), nil
	}
	if tot.Tokens == 0 {
		return noScore(name, method, newFailure(BadResponse, 0, nil, nil, "no document had a token to score")), nil
	}
	return schema.EvalResult{Name: name, Status: StatusOK, Method: method, Metrics: tot.metrics(), N: tot.Docs}, tot.items
}

func (r *Runner) pplByIDs(ctx context.Context, ts *tokSource, list []Doc) (pplTotals, *schema.EvalFailure) {
	toks := make([]*docIDs, len(list))
	r.cfg.Progress.begin("ppl: tokenizing", len(list))
	if f := r.forEach(ctx, len(list), func(ctx context.Context, i int) *schema.EvalFailure {
		d, f := r.tokenizeDoc(ctx, i, ts, list[i].Text)
		toks[i] = d
		return f
	}); f != nil {
		return pplTotals{}, f
	}
	type job struct {
		doc int
		w   Window
	}
	var jobs []job
	var tot pplTotals
	var mu sync.Mutex
	// Each document's log-likelihood and scored tokens, for its item.
	docLL, docTokens := make([]float64, len(list)), make([]int, len(list))
	for i, d := range toks {
		if len(d.ids) < 2 {
			continue
		}
		tot.Docs++
		tot.Words += list[i].Words
		tot.Bytes += list[i].Bytes
		for _, w := range Windows(len(d.ids), r.cfg.Window) {
			if w.Start == 0 && w.End <= len(d.scored) {
				// The tokenization echo saw exactly this prompt prefix.
				ll := sum(d.scored[w.From:w.End])
				tot.LL += ll
				tot.Tokens += w.End - w.From
				docLL[i] += ll
				docTokens[i] += w.End - w.From
				continue
			}
			jobs = append(jobs, job{i, w})
		}
	}
	r.cfg.Progress.begin("ppl", len(jobs))
	f := r.forEach(ctx, len(jobs), func(ctx context.Context, k int) *schema.EvalFailure {
		j := jobs[k]
		ids := toks[j.doc].ids[j.w.Start:j.w.End]
		req := EchoRequest(r.model, ids)
		e, f := r.sender(k).echo(ctx, r.model, req)
		if f != nil {
			return f
		}
		if e.PromptTokens != len(ids) {
			return newFailure(EchoMisaligned, http.StatusOK, nil, shape(req), fmt.Sprintf("usage.prompt_tokens %d for a prompt of %d token ids", e.PromptTokens, len(ids)))
		}
		ll := sum(e.Logprobs[j.w.From-j.w.Start:])
		mu.Lock()
		tot.LL += ll
		tot.Tokens += j.w.End - j.w.From
		docLL[j.doc] += ll
		docTokens[j.doc] += j.w.End - j.w.From
		mu.Unlock()
		return nil
	})
	for i, n := range docTokens {
		if n > 0 {
			tot.items = append(tot.items, docItem("ppl", i, -docLL[i], n))
		}
	}
	return tot, f
}

// pplByText scores each document in text pieces that fit a window: every
// piece one echo, all its prompt tokens but the first scored. A piece that
// turns out longer than the window is halved and sent again.
func (r *Runner) pplByText(ctx context.Context, ts *tokSource, list []Doc) (pplTotals, *schema.EvalFailure) {
	size := max(16, int(float64(r.cfg.Window-1)*ts.bytesPerToken*0.8))
	var tot pplTotals
	var mu sync.Mutex
	items := make([]schema.EvalItem, len(list))
	r.cfg.Progress.begin("ppl", len(list))
	f := r.forEach(ctx, len(list), func(ctx context.Context, i int) *schema.EvalFailure {
		var ll float64
		var n int
		todo := pieces(list[i].Text, size)
		for len(todo) > 0 {
			p := todo[0]
			todo = todo[1:]
			e, f := r.sender(i).echo(ctx, r.model, EchoRequest(r.model, p))
			if f != nil {
				return f
			}
			if e.PromptTokens > r.cfg.Window-1 && len(p) > 1 {
				todo = append(pieces(p, (len(p)+1)/2), todo...)
				continue
			}
			ll += sum(e.Logprobs[1:])
			n += e.PromptTokens - 1
		}
		mu.Lock()
		defer mu.Unlock()
		if n > 0 {
			tot.LL += ll
			tot.Tokens += n
			tot.Docs++
			tot.Words += list[i].Words
			tot.Bytes += list[i].Bytes
			items[i] = docItem("ppl", i, -ll, n)
		}
		return nil
	})
	tot.items = compactItems(items)
	return tot, f
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
