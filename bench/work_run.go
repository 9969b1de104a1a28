package bench

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
)

// swapNonce returns body with every occurrence of the run's nonce
// replaced: a probe of the load's exact shape under the prober's own.
func (b *builder) swapNonce(body []byte, nonce string) []byte {
	return bytes.ReplaceAll(body, []byte(b.nonce), []byte(nonce))
}

// cycle is how a sweep point draws from the plan: its request i is item
// i mod N, under a nonce of the point and the cycle (i div N), so that no
// two requests of a point are the same prompt and a shared-prefix group's
// first request in each cycle finds nothing cached, as the workload
// expects. It returns the point's body, max_tokens and annotation of
// request i. The plan's bodies were built under run (or, for a run
// without a nonce, under the one PrepareWorkload drew).
func (w *WorkPlan) cycle(run, point string) (body func(int) []byte, out func(int) int, annotate func(*schema.Record, int)) {
	n := max(w.N(), 1)
	if w.nonce != "" {
		run = w.nonce
	}
	old := []byte(run)
	body = func(i int) []byte {
		return bytes.ReplaceAll(w.body(i%n), old, []byte(cycleNonce(point, i/n, len(run))))
	}
	out = func(i int) int { return w.items[i%n].out }
	annotate = func(rec *schema.Record, i int) {
		r, it := w.Reqs[i%n], w.items[i%n]
		rec.MaxTokens = it.out
		rec.Group, rec.Session, rec.Turn = r.Group, r.Session, r.Turn
		if it.target >= 0 {
			rec.TargetPrompt = ptr(it.target)
		}
		if it.expected >= 0 {
			rec.ExpectedCached = ptr(it.expected)
		}
	}
	return body, out, annotate
}

// cycleNonce is the nonce of a sweep point's cycle k through a plan: as
// long as the run's (width bytes), which the prompts were calibrated
// with, so a sweep's prompts keep their lengths, and drawn from the point's
// nonce and k, so no two cycles or points share one.
func cycleNonce(point string, k, width int) string {
	h := fnv.New64a()
	h.Write([]byte(point + "c" + strconv.Itoa(k)))
	s := fmt.Sprintf("%016x", h.Sum64())
	for len(s) < width {
		s += s
	}
	return s[:width]
}

// annotate adds to records[i] what the workload knows of request i: its
// target and expected cached tokens, group, session and turn. A multi-turn
// turn after the first expects the whole prompt of its session's latest
// turn that completed, as the endpoint counted it when it did (else its
// target): the history is the workload's own, so every earlier turn's
// prompt is a prefix of this one. A turn that failed or was not sent is
// passed over, as one whose prefill no cache may hold (a 5xx, a refusal);
// for one that failed after its prefill the expectation is low. Records
// before i of a multi-turn session must have been written.
func (w *WorkPlan) annotate(records []schema.Record, i int) {
	rec, r, it := &records[i], w.Reqs[i], w.items[i]
	rec.MaxTokens = it.out
	rec.Group, rec.Session, rec.Turn = r.Group, r.Session, r.Turn
	if it.target >= 0 {
		rec.TargetPrompt = ptr(it.target)
	}
	exp := it.expected
	if w.multiTurn && r.Turn > 1 {
		exp = 0
		for j := i - 1; j >= 0 && w.Reqs[j].Session == r.Session; j-- {
			if prev := &records[j]; prev.Completed() {
				exp = w.items[j].target
				if prev.Prompt > 0 {
					exp = prev.Prompt
				}
				break
			}
		}
	}
	if exp >= 0 {
		rec.ExpectedCached = ptr(exp)
	}
}

// RunWorkPhase sends a workload phase's requests at their planned times
// (a multi-turn session's turns one after another, each its think time
// after the last ended) and waits for all of them to end. Like RunPhase it
// never fails: every request, sent or not, becomes a record.
func RunWorkPhase(ctx context.Context, o *Options, plan *WorkPlan) PhaseRun {
	spec := Spec{Name: plan.Phase.Name, N: plan.N(), In: plan.In, Out: plan.Out}
	inFlight := spec.N
	if plan.multiTurn {
		inFlight = sessions(plan.Reqs)
	}
	pool, conc := o.phasePool(inFlight)
	defer pool.Close()
	prog := o.progress()
	maxOut := 0
	for _, it := range plan.items {
		maxOut = max(maxOut, it.out)
	}
	ph := &phase{
		spec: spec, pool: pool, work: plan, prog: prog,
		body:    plan.body,
		out:     func(i int) int { return plan.items[i].out },
		evCap:   min(maxOut+8, 1<<16),
		records: make([]schema.Record, spec.N),
		lim:     o.Limits,
		api:     o.Shape.API,
	}
	ph.sem = slots(o.MaxConcurrency, spec.N)
	prog.begin(spec)
	burst := !plan.multiTurn && ph.sem == nil
	arrivals := make([]time.Duration, spec.N)
	for i, r := range plan.Reqs {
		arrivals[i] = r.At
		burst = burst && r.At == 0
	}
	run, status := ph.run(ctx, o, burst, conc, func() {
		switch {
		case plan.multiTurn:
			ph.sessions()
		case burst:
			ph.burst()
		default:
			ph.dispatch(arrivals)
		}
	})
	r := Result(o, Plan{Spec: spec, Cal: Calibration{PromptTokens: -1}}, ph.records, status)
	r.Workload = plan.Phase.Kind
	switch a := plan.Phase.Arrival; a.Kind {
	case workload.Poisson, workload.Gamma, workload.Constant:
		r.RequestRate = a.Rate
	}
	r.Server = serverside.Stats(run.Samples)
	run.Result = r
	return run
}

// sessions counts the distinct sessions of a multi-turn phase.
func sessions(reqs []workload.Request) int {
	seen := map[int]bool{}
	for _, r := range reqs {
		seen[r.Session] = true
	}
	return max(len(seen), 1)
}

// sessions sends each session's turns in order, in a goroutine of its
// own: turn 1 at its planned time, each later one its think time after the
// previous ended. The turns a session had no time to send (the phase ended
// first) are recorded as not sent.
func (ph *phase) sessions() {
	reqs := ph.work.Reqs
	ph.start = time.Now()
	var all sync.WaitGroup
	for first := 0; first < len(reqs); {
		last := first + 1
		for last < len(reqs) && reqs[last].Session == reqs[first].Session {
			last++
		}
		all.Add(1)
		go func(first, last int) {
			defer all.Done()
			planned := ph.start.Add(reqs[first].At)
			for i := first; i < last; i++ {
				send := ph.ready(i)
				at, queued, ok := ph.await(planned)
				if !ok {
					for k := i; k < last; k++ {
						ph.notSent(k)
					}
					return
				}
				ph.wg.Add(1)
				send(at, queued)
				if ph.sem != nil {
					<-ph.sem
				}
				if i+1 < last {
					planned = time.Now().Add(reqs[i+1].Think)
				}
			}
		}(first, last)
		first = last
	}
	all.Wait()
}
