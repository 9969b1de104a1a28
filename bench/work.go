package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
)

// WorkPhase is a workload phase expanded into its requests
// (workload.Phase.Expand), before any text is built.
type WorkPhase struct {
	Phase workload.Phase
	Reqs  []workload.Request
}

// WorkPlan is a workload phase ready to run: every request's body laid out
// in the endpoint's own tokens, with what the record of each will keep.
// A body is made when its request is sent (body), from a few numbers a
// request and text the phase shares, so that a long phase, or a multi-turn
// one whose turns resend their histories, holds no body it is not sending.
type WorkPlan struct {
	Phase workload.Phase
	Reqs  []workload.Request
	// In and Out are the phase's nominal lengths, for its result's
	// input_len and output_len: the asked lengths where the kind has one,
	// else the mean target.
	In, Out int
	items   []workItem
	// multiTurn phases send each session's turns one after another.
	multiTurn bool
	// nonce is the one the bodies were built under: the run's, or one
	// drawn for a run without (a swap of "" would rewrite every byte).
	nonce string
	shape Shape
	// fill is the builder's filler, grown at build time past every length
	// a body takes from it, so that making bodies only reads it (they are
	// made on many goroutines at once).
	fill *filler
	// sys is a shared-prefix phase's system message filler, after its
	// group prefix; answers[k] a multi-turn phase's answer to turn k+1.
	sys     string
	answers []string
}

// workItem is one request of a WorkPlan, ready to send: what its body is
// made of (WorkPlan.messages), and what its record keeps.
type workItem struct {
	// idx is the index its prefix carries: past the earlier phases'.
	idx int
	// chars is the filler bytes of its user message after its prefix
	// (every kind but a data set's), cut to whole words.
	chars int
	// group is a shared-prefix request's group prefix number, past the
	// earlier phases' groups.
	group int
	// turn is a multi-turn request's 0-based turn, prev its session's
	// previous turn's index (-1 for the first).
	turn, prev int
	// user is a data set item's first user message, which its prefix
	// starts.
	user int
	out  int
	// target is the usage.prompt_tokens asked for, -1 for a data set's item.
	target int
	// expected is the prompt tokens an earlier request sent as a prefix of
	// this one, -1 when the workload does not say. A multi-turn turn's is
	// replaced by its previous turn's measured prompt tokens when known.
	expected int
}

// N is the number of requests the plan sends.
func (w *WorkPlan) N() int { return len(w.items) }

// user is request i's user message: its prefix, then its filler.
func (w *WorkPlan) user(i int) endpoints.Message {
	it := &w.items[i]
	return endpoints.Message{Role: "user", Content: Prefix(w.nonce, it.idx) + w.fill.Words(it.chars)}
}

// messages is request i's chat.
func (w *WorkPlan) messages(i int) []endpoints.Message {
	it := &w.items[i]
	switch w.Phase.Kind {
	case workload.Dataset:
		src := w.Reqs[i].Messages
		msgs := make([]endpoints.Message, len(src))
		for k, m := range src {
			msgs[k] = endpoints.Message{Role: m.Role, Content: m.Content}
		}
		// The nonce starts the first user message: after a system prompt
		// the items may share, before the rest.
		msgs[it.user].Content = Prefix(w.nonce, it.idx) + msgs[it.user].Content
		return msgs
	case workload.SharedPrefix:
		return []endpoints.Message{{Role: "system", Content: groupPrefix(w.nonce, it.group) + w.sys}, w.user(i)}
	case workload.MultiTurn:
		// The session's turns up to this one, each earlier one answered.
		var chain []int
		for j := i; j >= 0; j = w.items[j].prev {
			chain = append(chain, j)
		}
		msgs := make([]endpoints.Message, 0, 2*len(chain)-1)
		for k := len(chain) - 1; k >= 0; k-- {
			j := chain[k]
			msgs = append(msgs, w.user(j))
			if k > 0 {
				msgs = append(msgs, endpoints.Message{Role: "assistant", Content: w.answers[w.items[j].turn]})
			}
		}
		return msgs
	}
	return []endpoints.Message{w.user(i)}
}

// body is request i's body, made afresh.
func (w *WorkPlan) body(i int) []byte {
	return w.shape.messagesBody(w.messages(i), w.items[i].out, true)
}

// size is about the bytes of request i's body: its messages' contents.
func (w *WorkPlan) size(i int) int {
	n := 0
	for _, m := range w.messages(i) {
		n += len(m.Content)
	}
	return n
}

// builder makes a workload's bodies: the run's shape and nonce, the curve
// that maps token targets onto the filler, and the prober that measures
// the parts a curve cannot (a system prompt's, a history's count).
type builder struct {
	shape Shape
	nonce string
	cv    *curve
	fill  *filler
	p     *prober
	// warns are what the plans' building found to tell the terminal.
	warns []string
	// off and groups are the request indices and shared-prefix groups the
	// run's earlier phases took: each phase's prefixes start past them, so
	// that no phase finds another's prompts or system prompts cached (the
	// filler starts every prompt alike).
	off, groups int
}

// groupPrefix starts shared-prefix group g's system prompt: as long as a
// request's prefix, and apart from every request's.
func groupPrefix(nonce string, g int) string { return fmt.Sprintf("%s-g%05d ", nonce, g) }

// words returns filler that adds about tokens tokens after a prefix.
func (b *builder) words(tokens int) string { return b.fill.Words(b.cv.chars(tokens)) }

// userChars is the filler length of a user message adding about tokens
// tokens after its prefix, its words cut now: the filler grows here, while
// the plan is built, never when a body is made.
func (b *builder) userChars(tokens int) int {
	chars := b.cv.chars(tokens)
	b.fill.Words(chars)
	return chars
}

// build makes the plan of one expanded phase. A shared-prefix phase costs
// one probe (the system prompt's count), a multi-turn phase one per turn
// after the first (each history's count), all of them with the prober's
// own nonce, so no probe leaves in a cache what the load will send.
func (b *builder) build(ctx context.Context, wp WorkPhase) (*WorkPlan, error) {
	ph, reqs := wp.Phase, wp.Reqs
	plan := &WorkPlan{Phase: ph, Reqs: reqs, items: make([]workItem, len(reqs)), multiTurn: ph.Kind == workload.MultiTurn,
		nonce: b.nonce, shape: b.shape, fill: b.fill}
	b.p.phase = ph.Name
	switch ph.Kind {
	case workload.SharedPrefix:
		if err := b.sharedPrefix(ctx, plan); err != nil {
			return nil, err
		}
	case workload.MultiTurn:
		if err := b.multiTurn(ctx, plan); err != nil {
			return nil, err
		}
	case workload.Dataset:
		for i, r := range reqs {
			user := slices.IndexFunc(r.Messages, func(m workload.Message) bool { return m.Role == "user" })
			if user < 0 {
				// Without a user message no nonce would start it, and the
				// shape probe would leave the load's own prompt cached.
				where := cmp.Or(r.File, ph.Path) // a shard's path, for a folder of them
				if r.Line > 0 {
					where = fmt.Sprintf("%s:%d", where, r.Line)
				}
				return nil, badinput.Errorf("phase %s: %s: no user message (the run's nonce starts the first one, so that no cache holds an item before the run sends it)", ph.Name, where)
			}
			out := r.Output
			if out <= 0 {
				out = max(1, int(float64(r.AnswerChars)*b.cv.tokensPerChar()+0.5))
			}
			plan.items[i] = workItem{idx: b.off + i, user: user, out: out, target: -1, expected: -1}
		}
	default: // fixed, random, trace: one user message of Input tokens in all
		short, least := 0, 0
		for i, r := range reqs {
			if !b.cv.noUsage && r.Input < b.cv.base {
				// No filler makes a prompt shorter than the template and
				// the prefix: sent at that, far off its target.
				if short == 0 || r.Input < least {
					least = r.Input
				}
				short++
			}
			plan.items[i] = workItem{idx: b.off + i, chars: b.userChars(r.Input - b.cv.base), out: r.Output, target: r.Input, expected: 0}
		}
		switch {
		case short > 0 && ph.Kind == workload.Fixed:
			return nil, badinput.Errorf("phase %s: an input of %d tokens is below the endpoint's smallest prompt of %d tokens (%s)", ph.Name, least, b.cv.base, b.shape.overhead())
		case short > 0:
			b.warns = append(b.warns, fmt.Sprintf("phase %s: %d of %d requests ask for fewer prompt tokens than the endpoint's smallest prompt of %d (%s; the least asks %d): they are sent at %d, and their drift says so",
				ph.Name, short, len(reqs), b.cv.base, b.shape.overhead(), least, b.cv.base))
		}
	}
	plan.In, plan.Out = Nominal(ph, reqs)
	return plan, nil
}

// sharedPrefix builds groups whose requests share a system message that
// adds PrefixTokens tokens to a prompt (its template tokens and group
// prefix included, the rest whole filler words), then differ from their own
// prefix on: a question making the whole prompt Input tokens. The system
// message's count is measured twice, bare and filled (its group prefix has
// the prober's nonce, the same length as the load's). A request after the
// first of its group can find in a cache the system message, measured as
// the count it adds to a prompt (the template's own first tokens are shared
// too, and not counted: expected is a little low).
func (b *builder) sharedPrefix(ctx context.Context, plan *WorkPlan) error {
	reqs := plan.Reqs
	if len(reqs) == 0 {
		return nil
	}
	// The system message alone (its template and group prefix) first, so
	// that with its filler it adds PrefixTokens in all.
	system := func(text string) []endpoints.Message {
		return []endpoints.Message{{Role: "system", Content: groupPrefix(b.p.nonce, 1) + text}, b.p.userMessage("")[0]}
	}
	var sys string
	withSys, shared := b.cv.base, 0
	if b.cv.noUsage {
		// Uncounted: the system message is taken to add its target, so
		// the question still makes the whole prompt Input.
		sys = b.words(reqs[0].PrefixTokens)
		withSys, shared = reqs[0].PrefixTokens, reqs[0].PrefixTokens
	} else {
		bare, err := b.p.count(ctx, system(""))
		if err != nil {
			return err
		}
		sys = b.words(reqs[0].PrefixTokens - (bare - b.cv.base))
		if withSys, err = b.p.count(ctx, system(sys)); err != nil {
			return err
		}
		shared = max(withSys-b.cv.base, 0)
		if withSys > reqs[0].Input {
			// The question's template and prefix take more than
			// question_tokens: no question text, and every prompt over.
			b.warns = append(b.warns, fmt.Sprintf("phase %s: the system prompt with %s alone make %d prompt tokens on the endpoint, over the %d of prefix_tokens + question_tokens: every prompt is sent at %d, and its drift says so (raise question_tokens)",
				plan.Phase.Name, b.shape.questionOverhead(), withSys, reqs[0].Input, withSys))
		}
	}
	plan.sys = sys
	seen := map[int]bool{}
	for i, r := range reqs {
		exp := 0
		if seen[r.Group] {
			exp = shared
		}
		seen[r.Group] = true
		plan.items[i] = workItem{idx: b.off + i, group: b.groups + r.Group, chars: b.userChars(r.Input - withSys), out: r.Output, target: r.Input, expected: exp}
	}
	return nil
}

// multiTurn builds sessions whose turn k sends the whole history, turns 1
// to k−1 with an answer of Output tokens of filler each (not the server's
// answer: every endpoint and run gets the same history), and a new user
// message making the prompt Input tokens. Every session has the same
// lengths, so turn k's history count is measured once, on the prober's
// own session. Turn k's expected cached prefix is turn k−1's whole prompt.
func (b *builder) multiTurn(ctx context.Context, plan *WorkPlan) error {
	turns := 0
	for _, r := range plan.Reqs {
		turns = max(turns, r.Turn)
	}
	// userTokens[k] is what turn k+1's user message adds; answers[k] the
	// answer after it.
	userTokens := make([]int, turns)
	answers := make([]string, turns)
	var probe []endpoints.Message
	// est is the history's tokens by the targets, for an endpoint that
	// counts none: its user messages and answers so far.
	est := 0
	for _, r := range plan.Reqs {
		if r.Session != plan.Reqs[0].Session {
			break
		}
		k := r.Turn - 1
		base := b.cv.base
		if b.cv.noUsage {
			base = est
		} else if k > 0 {
			// The history so far, and the new turn's prefix alone.
			msgs := append(slices.Clone(probe), endpoints.Message{Role: "user", Content: Prefix(b.p.nonce, ProbeIndex-k)})
			n, err := b.p.count(ctx, msgs)
			if err != nil {
				return err
			}
			base = n
		}
		userTokens[k] = r.Input - base
		switch {
		case userTokens[k] >= 0 || b.cv.noUsage:
		case k == 0:
			return badinput.Errorf("phase %s: user_tokens %d is below the endpoint's smallest prompt of %d tokens (%s)", plan.Phase.Name, r.Input, base, b.shape.overhead())
		default:
			// The history and the new turn's prefix alone pass the turn's
			// target: every turn from here on would miss it.
			included, perTurn := b.shape.turnOverhead()
			return badinput.Errorf("phase %s: turn %d's history is %d prompt tokens on the endpoint (%s), over the turn's %d: raise user_tokens (%d) above %s, or lower turns",
				plan.Phase.Name, k+1, base, included, r.Input, r.UserTokens, perTurn)
		}
		est += userTokens[k] + r.Output
		answers[k] = b.words(r.Output)
		probe = append(probe, endpoints.Message{Role: "user", Content: Prefix(b.p.nonce, ProbeIndex-k) + b.words(userTokens[k])},
			endpoints.Message{Role: "assistant", Content: answers[k]})
	}
	plan.answers = answers
	for i, r := range plan.Reqs {
		k := r.Turn - 1
		exp, prev := 0, -1
		if k > 0 {
			exp, prev = plan.Reqs[i-1].Input, i-1 // exp: replaced by the measured count when there is one
		}
		plan.items[i] = workItem{idx: b.off + i, chars: b.userChars(userTokens[k]), turn: k, prev: prev, out: r.Output, target: r.Input, expected: exp}
	}
	return nil
}

// Nominal is an expanded phase's input_len and output_len: the asked
// lengths where the kind has one, else the mean over its requests (a data
// set's items with no max_tokens, whose output the endpoint's curve sets,
// left out). It depends on the workload alone, never on the endpoint, so
// that two endpoints' phases compare.
func Nominal(ph workload.Phase, reqs []workload.Request) (in, out int) {
	var sumIn, nIn, sumOut, nOut int
	for _, r := range reqs {
		if r.Input > 0 {
			sumIn += r.Input
			nIn++
		}
		if r.Output > 0 {
			sumOut += r.Output
			nOut++
		}
	}
	if nIn > 0 {
		in = (sumIn + nIn/2) / nIn
	}
	if nOut > 0 {
		out = (sumOut + nOut/2) / nOut
	}
	switch ph.Kind {
	case workload.Fixed:
		in, out = ph.InputTokens, ph.OutputTokens
	case workload.SharedPrefix:
		in, out = ph.PrefixTokens+ph.QuestionTokens, ph.OutputTokens
	}
	return in, out
}

// ratioTokens is how far, at the least, the curve is measured for a data
// set whose answers' lengths it estimates: its tokens-per-character over a
// few hundred tokens is within a percent or so, where a single short probe's
// is off by a cut word.
const ratioTokens = 256

// PrepareWorkload measures the filler's curve on the endpoint once, up to
// the longest part any phase needs, and builds every phase's bodies on it,
// all before any load. Where the server states its context, each request's
// prompt and output are checked against it first, and every phase's
// longest request is probed in its exact shape (max_tokens and all). The
// errors are Prepare's: bad input for an endpoint that refuses or
// truncates what the workload needs, a phase without requests, or a data
// set's item without a user message; ctx's cause when it is cancelled.
// Each phase's prefixes and groups are numbered past the earlier phases',
// under o.Nonce (one is drawn when it is empty).
func PrepareWorkload(ctx context.Context, o *Options, phases []WorkPhase) ([]*WorkPlan, []string, error) {
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 2, ConnectTimeout: o.ConnectTimeout, Trust: o.Endpoint.Trust})
	defer tr.Close()
	client := endpoints.NewClient(o.Endpoint, tr)
	var specs []Spec
	need, longest := 0, 0
	for _, wp := range phases {
		if len(wp.Reqs) == 0 {
			// A sweep draws its requests from the plan's, in turn.
			return nil, nil, badinput.Errorf("phase %s: no requests", wp.Phase.Name)
		}
		s := Spec{Name: wp.Phase.Name, N: len(wp.Reqs)}
		for _, r := range wp.Reqs {
			if r.Input+r.Output > s.In+s.Out {
				s.In, s.Out = r.Input, r.Output
			}
			need = max(need, r.Input, r.UserTokens, r.Output)
			if r.Output <= 0 && r.AnswerChars > 0 {
				// A data set's answer is estimated by the curve's ratio:
				// measured over ratioTokens at the least, or the answer's
				// bytes (no tokenizer makes more tokens of them).
				need = max(need, min(ratioTokens, r.AnswerChars))
			}
			longest = max(longest, r.Input)
		}
		specs = append(specs, s)
	}
	if err := preflight(ctx, o, client, specs); err != nil {
		return nil, nil, err
	}
	limit := ProbeLimit(o.ProbeTimeout, longest)
	budget := o.CalibrationBudget
	if budget <= 0 {
		budget = time.Duration(5*(1+len(phases))) * limit
	}
	cctx, cancel := context.WithTimeoutCause(ctx, budget, errCalibrationBudget)
	defer cancel()
	p := &prober{client: client, shape: o.Shape, nonce: NewNonce(), fill: newFiller(), lim: endpoints.StreamLimits{MaxTokens: 1, Total: limit}}
	if o.Limits.Stall > 0 {
		p.lim.Stall = min(o.Limits.Stall, limit)
	}
	if len(phases) > 0 {
		p.phase = phases[0].Phase.Name
	}
	spent := func(err error) error {
		if err == nil {
			return nil
		}
		if badinput.Is(err) {
			return err
		}
		return calibrationEnd(err, p.phase, budget, p.probes)
	}
	cv, err := p.measure(cctx, need)
	if err != nil {
		return nil, nil, spent(err)
	}
	var warns []string
	if cv.noUsage {
		warns = append(warns, cv.String())
	}
	nonce := o.Nonce
	if nonce == "" {
		nonce = NewNonce()
	}
	b := &builder{shape: o.Shape, nonce: nonce, cv: cv, fill: newFiller(), p: p}
	var plans []*WorkPlan
	for _, wp := range phases {
		plan, err := b.build(cctx, wp)
		if err != nil {
			return nil, warns, spent(err)
		}
		if err := b.shapeProbe(cctx, plan); err != nil {
			return nil, warns, spent(err)
		}
		plans = append(plans, plan)
		warns, b.warns = append(warns, b.warns...), nil
		b.off += len(wp.Reqs)
		g := 0
		for _, r := range wp.Reqs {
			g = max(g, r.Group)
		}
		b.groups += g
	}
	return plans, warns, nil
}

// shapeProbe sends the plan's longest request, under the prober's nonce,
// stopped at its first token: the endpoint takes the phase's shape. The
// longest is by prompt and output tokens together, as a server's context
// check counts them (vLLM and SGLang refuse prompt + max_tokens past the
// context): a data set item's prompt estimated by the curve's ratio, never
// its bytes beside its tokens, which would pick a long prompt with a short
// answer over a shorter one with a long answer that does not fit.
func (b *builder) shapeProbe(ctx context.Context, plan *WorkPlan) error {
	p := b.p
	if plan.N() == 0 {
		return nil
	}
	longest, most := 0, -1
	for i, it := range plan.items {
		in := it.target
		if in < 0 {
			in = b.cv.base + int(float64(plan.size(i))*b.cv.tokensPerChar()+0.5)
		}
		if n := in + it.out; n > most {
			longest, most = i, n
		}
	}
	it := plan.items[longest]
	body := b.swapNonce(plan.body(longest), p.nonce)
	lim := p.lim
	lim.MaxTokens = it.out
	var res endpoints.StreamResult
	p.client.StreamUntilFirst(ctx, p.shape.API, body, lim, &res)
	if res.Cancelled != nil {
		return res.Cancelled
	}
	if res.Class != "" {
		return p.fail("probe of the load's request shape", &res)
	}
	return nil
}
