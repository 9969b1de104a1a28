package sched

// Speculative decoding (SGLang's EAGLE with topk 1, drafting with the
// model's MTP layer): each decode step the drafter proposes k tokens after
// every running request's last one, the main model verifies all k+1
// positions of every request in one forward pass, and each request takes
// the longest run of drafts that its own sampler agrees with, plus the
// sampler's token after that run (the bonus). The sampler draws once per
// emitted token, from the logits of the same context as plain decoding, so
// greedy requests give exactly plain decoding's tokens and seeded sampled
// ones exactly its draws: speculation is on for every request, greedy or
// not. The KV written for rejected drafts lies past the committed length
// and its pages go back to the pool.

import (
	"fmt"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// lookahead is how many tokens q drafts next step: speculative_num_steps,
// less near max_tokens, so that a step never writes past the last position
// the request may fill (its KV budget, checked at Submit).
func (s *Scheduler) lookahead(q *req) int {
	if s.spec == nil {
		return 0
	}
	return max(0, min(s.cfg.SpeculativeNumSteps, q.r.Params.MaxNewTokens-len(q.out)-1))
}

// hiddenRows is q's pending hidden states (see req.hid) followed by rows of
// h, as a matrix of width cols.
func hiddenRows(q *req, h kernels.Mat, cols int) kernels.Mat {
	pending := q.hid
	if pending == nil {
		pending = [][]float32{nil}
	}
	m := kernels.NewMat(make([]float32, (len(pending)+h.Rows)*cols), len(pending)+h.Rows, cols)
	for i, r := range pending {
		copy(m.Row(i), r) // nil: the zero row
	}
	for i := range h.Rows {
		copy(m.Row(len(pending)+i), h.Row(i))
	}
	return m
}

// fillDrafter brings the drafter's cache up to the prompt positions a
// prefill batch computed, for the requests still alive after it, so that
// only the last hidden state is kept between steps however long the prompt.
func (s *Scheduler) fillDrafter(batch []*req, seqs []model.Seq, out *model.Output) {
	var ds []model.DraftSeq
	for i, q := range batch {
		if q.pages == nil || q.drafted != seqs[i].Pos {
			continue // finished at its first token, or not its draft position
		}
		_, h := out.SeqRows(i)
		n := len(seqs[i].Tokens)
		ds = append(ds, model.DraftSeq{Seq: seqs[i], Hidden: hiddenRows(q, h.Slice(0, n-1, 0, h.Cols), h.Cols), All: q.tokens()[:seqs[i].Pos+n]})
		q.drafted, q.hid = seqs[i].Pos+n, [][]float32{append([]float32(nil), h.Row(n-1)...)}
	}
	if len(ds) > 0 {
		s.spec.Draft(ds)
	}
}

// verifyStep is the decode step with speculation over batch (the running
// requests, with their pages for k more positions): draft, verify in one
// forward pass, emit each request's accepted run and bonus token.
func (s *Scheduler) verifyStep(batch []*req) {
	ds := make([]model.DraftSeq, len(batch))
	cols := 0
	for i, q := range batch {
		toks := q.tokens()
		n := len(toks)
		k := s.lookahead(q)
		if len(q.hid) > 0 {
			cols = len(q.hid[0])
		}
		ds[i] = model.DraftSeq{
			Seq: model.Seq{Tokens: toks[q.drafted:], Pos: q.drafted, Slots: q.slotsTo(s.kv, n+k)},
			K:   k, All: toks,
		}
	}
	for i, q := range batch {
		ds[i].Hidden = hiddenRows(q, kernels.Mat{}, cols)
	}
	drafts := s.spec.Draft(ds)
	if len(drafts) != len(ds) {
		panic(fmt.Sprintf("sched: the drafter answered %d of %d sequences", len(drafts), len(ds)))
	}
	seqs := make([]model.Seq, len(batch))
	for i, q := range batch {
		toks := q.tokens()
		last := len(toks) - 1
		d := drafts[i]
		if len(d) > ds[i].K {
			d = d[:ds[i].K]
		}
		drafts[i] = d
		verify := append(append(make([]int32, 0, len(d)+1), toks[last]), d...)
		seqs[i] = model.Seq{Tokens: verify, Pos: last, Slots: q.slotsTo(s.kv, last+len(verify)), Logits: model.AllRows}
		// The drafter's cache holds the committed context up to the last
		// token's position now; later rows are provisional.
		q.drafted, q.hid = last+1, nil
	}
	out := s.exec.Forward(seqs)
	for i, q := range batch {
		s.accept(q, seqs[i], drafts[i], out, i)
	}
	s.decayRatio()
}

// accept emits q's tokens from its verify rows (sequence j of out): row i
// gives the token after verify position i, sampled as plain decoding would;
// the run goes on while that token is the next draft and q is not done (a
// stop token or max_tokens, as finishAt decides for take). It counts the
// step, keeps the hidden states of the committed positions for the next
// draft, and gives back the pages past the new length.
func (s *Scheduler) accept(q *req, seq model.Seq, drafts []int32, out *model.Output, j int) {
	logits, hidden := out.SeqRows(j)
	var run []int32
	for i := range seq.Tokens {
		row := logits.Row(i)
		s.maskPadding(row)
		tok := q.sampler.Sample(row)
		run = append(run, tok)
		if q.finishAt(tok, len(q.out)+len(run)) != nil || i == len(drafts) || tok != drafts[i] {
			break
		}
	}
	// The step is counted before its tokens go out: a client that reads
	// /metrics as soon as its response ends finds its last step there.
	emitted := len(run)
	s.specSteps++
	s.specDrafted += int64(len(drafts))
	s.specAccepted += int64(emitted - 1)
	if s.obs != nil {
		s.obs.Verified(len(drafts), emitted-1)
	}
	s.observeTokens(q, emitted)
	for i, tok := range run {
		// Verify row i read positions up to seq.Pos+i: those are cached.
		q.filled = seq.Pos + i + 1
		s.take(q, tok, logits.Row(i))
	}
	if q.pages == nil {
		return
	}
	q.hid = make([][]float32, emitted)
	for i := range emitted {
		q.hid[i] = append([]float32(nil), hidden.Row(i)...)
	}
	// Release the pages that only rejected drafts used: the next step
	// needs positions up to the last token's, and makeRoom gives the rest.
	keep := (len(q.tokens()) + s.cfg.PageSize - 1) / s.cfg.PageSize
	if keep < len(q.pages) {
		s.kv.Release(q.pages[max(keep, q.shared):])
		q.pages = q.pages[:max(keep, q.shared)]
		q.slots = q.slots[:min(len(q.slots), len(q.pages)*s.cfg.PageSize)]
	}
}
