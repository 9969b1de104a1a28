// Package sim is the reference engine's simulated executor: the real
// scheduler and API run unchanged, but each batch costs a modelled time
// instead of the model's math, and the "model" answers with deterministic
// tokens. One machine can then serve thousands of streams at hundreds of
// thousands of tokens a second — enough load to measure a benchmark
// client against the server's own truth (glmbench selftest).
package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/kernels"
)

// CostModel gives a batch's step time: a fixed overhead per step, plus a
// cost per prompt token computed, per sequence decoding a token, and per
// cached token the batch's sequences read (their context lengths summed).
type CostModel struct {
	StepOverhead time.Duration `json:"step_overhead"`
	PrefillToken time.Duration `json:"prefill_token"`
	DecodeSeq    time.Duration `json:"decode_seq"`
	KVRead       time.Duration `json:"kv_read"`
}

// DefaultCost is a fast engine: a 4,096-stream decode batch of short
// contexts steps in about 10 ms, over 400,000 tokens a second.
var DefaultCost = CostModel{
	StepOverhead: 2 * time.Millisecond,
	PrefillToken: 200 * time.Nanosecond,
	DecodeSeq:    2 * time.Microsecond,
	KVRead:       time.Nanosecond,
}

// ReadCost reads a cost model from a JSON file of durations in Go syntax,
// e.g. {"step_overhead": "2ms", "decode_seq": "2us"}; fields left out keep
// DefaultCost's values.
func ReadCost(path string) (CostModel, error) {
	c := DefaultCost
	b, err := boundedfile.Read(path, maxCostFile, "a cost model file")
	if err != nil {
		return c, err
	}
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range raw {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("%s: %s: %q is not a duration", path, k, v)
		}
		switch k {
		case "step_overhead":
			c.StepOverhead = d
		case "prefill_token":
			c.PrefillToken = d
		case "decode_seq":
			c.DecodeSeq = d
		case "kv_read":
			c.KVRead = d
		default:
			return c, fmt.Errorf("%s: unknown cost %q (step_overhead, prefill_token, decode_seq, kv_read)", path, k)
		}
	}
	return c, nil
}

// VerifyTime is the modelled time of a speculative verify batch: each
// sequence of k+1 tokens (its last token and k drafts) is one forward
// pass, costed as a decode plus k prompt tokens and one read of its
// context. Drafting itself is not modelled (the MTP layer is one layer of
// many).
func (c CostModel) VerifyTime(seqs []model.Seq) time.Duration {
	d := c.StepOverhead
	for _, s := range seqs {
		n := len(s.Tokens)
		d += c.DecodeSeq + time.Duration(n-1)*c.PrefillToken + time.Duration(s.Pos+n)*c.KVRead
	}
	return d
}

// StepTime is the modelled time of one batch.
func (c CostModel) StepTime(seqs []model.Seq) time.Duration {
	d := c.StepOverhead
	for _, s := range seqs {
		n := len(s.Tokens)
		if n == 1 && s.Pos > 0 {
			d += c.DecodeSeq
		} else {
			d += time.Duration(n) * c.PrefillToken
		}
		d += time.Duration(s.Pos+n) * c.KVRead
	}
	return d
}

// Executor answers batches after their modelled step time with logits that
// make every sampler, greedy or not, pick a known token: the token after
// position p is the letter 'a' + p mod 26 (one byte, never a stop token), so
// each token is one streamed character.
type Executor struct {
	cost  CostModel
	kv    *model.KVCache
	vocab int
	now   func() time.Time
	sleep func(time.Duration)
	// end is the previous step's modelled end (see Forward), zero after
	// Idle.
	end time.Time

	logits []float32
	first  []int

	// accept is the mean accept length of a verify step (see
	// SetAcceptLength); steps counts the sequences drafted for so far, and
	// verifying says that the next Forward verifies drafts.
	accept    float64
	steps     int
	verifying bool
}

// New returns an executor with a page pool of pages·pageSize tokens and
// logits over vocab ids.
func New(cost CostModel, pages, pageSize, vocab int) *Executor {
	return &Executor{cost: cost, kv: model.NewKVPages(pages, pageSize), vocab: vocab, now: time.Now, sleep: time.Sleep}
}

// Token is the token the simulated model gives after position p.
func Token(p int) int32 { return int32('a' + p%26) }

// SetAcceptLength fixes the speculative accept length, as SGLang's
// SGLANG_SIMULATE_ACC_LEN does: a verify step emits a tokens per sequence
// on average (its accepted drafts plus the bonus token), so that a
// benchmark of speculative serving has a known answer. Step n of all
// drafted sequences accepts ⌊(n+1)(a−1)⌋ − ⌊n(a−1)⌋ drafts, at most the
// step's k: a = 2.5 accepts 1, 2, 1, 2, … The default, 1, accepts none.
// It refuses a below 1 or not a number.
func (e *Executor) SetAcceptLength(a float64) error {
	if !(a >= 1) || math.IsInf(a, 1) {
		return fmt.Errorf("simulated accept length %v: want a number of tokens of at least 1", a)
	}
	e.accept = a
	return nil
}

// Draft implements sched.SpecExecutor: each sequence's drafts are the
// simulated model's own next tokens for as many as this step accepts (see
// SetAcceptLength), then tokens it never gives (the letter after).
func (e *Executor) Draft(seqs []model.DraftSeq) [][]int32 {
	rate := max(e.accept, 1) - 1
	out := make([][]int32, len(seqs))
	for i, s := range seqs {
		if s.K == 0 {
			continue
		}
		e.verifying = true
		n := float64(e.steps)
		e.steps++
		take := int(math.Floor((n+1)*rate) - math.Floor(n*rate))
		last := s.Pos + len(s.Tokens) - 1
		for j := range s.K {
			tok := Token(last + j) // the token at last+j+1
			if j >= take {
				tok++ // 'b' for 'a', …, '{' for 'z': never the simulated token
			}
			out[i] = append(out[i], tok)
		}
	}
	return out
}

// Pool implements sched.Executor.
func (e *Executor) Pool() *model.KVCache { return e.kv }

// Idle hears that the scheduler ran out of work and waits for more: the
// next step counts from its own start, however soon it comes.
func (e *Executor) Idle() { e.end = time.Time{} }

// Forward implements sched.Executor: it waits out the batch's modelled time
// and returns one-hot logits. The time is counted from the step's start, so
// building the logits is inside it; and when the scheduler went straight
// from the last step to this one (it did not wait for work in between, see
// Idle, and the gap since that step's modelled end is shorter than this
// step's time), from that end instead, so that neither the scheduler's own
// work between steps nor a sleep that woke late adds to the model:
// back-to-back steps follow each other at exactly their modelled times, the
// truth a capacity test is checked against. Work longer than the model (a
// real CPU cost) is never hidden: a step ends no sooner than its work.
func (e *Executor) Forward(seqs []model.Seq) *model.Output {
	start := e.now()
	step := e.cost.StepTime(seqs)
	if e.verifying {
		step, e.verifying = e.cost.VerifyTime(seqs), false
	}
	begin := start
	if gap := start.Sub(e.end); !e.end.IsZero() && gap >= 0 && gap < step {
		begin = e.end
	}
	rows := 0
	e.first = e.first[:0]
	for _, s := range seqs {
		e.first = append(e.first, rows)
		switch s.Logits {
		case model.LastRow:
			rows++
		case model.AllRows:
			rows += len(s.Tokens)
		}
	}
	if cap(e.logits) < rows*e.vocab {
		e.logits = make([]float32, rows*e.vocab)
	}
	out := &model.Output{First: e.first, Logits: kernels.NewMat(e.logits[:rows*e.vocab], rows, e.vocab), Hidden: kernels.Mat{Rows: rows}}
	r := 0
	for _, s := range seqs {
		emit := func(pos int) {
			row := out.Logits.Row(r)
			for i := range row {
				row[i] = -1e4 // e^-10000: no sampler picks these
			}
			row[Token(pos)] = 0
			r++
		}
		switch s.Logits {
		case model.LastRow:
			emit(s.Pos + len(s.Tokens) - 1)
		case model.AllRows:
			for i := range s.Tokens {
				emit(s.Pos + i)
			}
		}
	}
	deadline := begin.Add(step)
	done := e.now()
	if wait := deadline.Sub(done); wait > 0 {
		e.sleep(wait)
		e.end = deadline
	} else {
		e.end = done
	}
	return out
}

// maxCostFile is the most bytes of a cost model file read: the file holds four durations, so /dev/zero or a wrong
// path is refused in one line instead of read whole until out of memory.
const maxCostFile = 16 << 20
