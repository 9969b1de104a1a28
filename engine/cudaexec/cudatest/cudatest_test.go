package cudatest

import (
	"fmt"
	"testing"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// recorder is a testing.TB that keeps what failed instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.Errorf(f, a...)
	panic(r)
}
func (r *recorder) Fatal(a ...any) { r.Fatalf("%s", fmt.Sprint(a...)) }
func (r *recorder) Failed() bool   { return len(r.errs) > 0 }

// nudged adds d to one logit of every row it returns: a device off by d.
type nudged struct {
	m *model.Model
	d float32
}

func (n nudged) Forward(seqs []model.Seq) *model.Output {
	o := n.m.Forward(seqs)
	for i := range o.Logits.Rows {
		o.Logits.Row(i)[3] += n.d
	}
	return o
}

func nano(t *testing.T) (*model.Config, *model.Weights) {
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, model.Synth(cfg, 3)
}

// run checks a device (nudged by d) against the CPU on the same weights and
// returns what the check said.
func run(t *testing.T, d float32) []string {
	cfg, w := nano(t)
	cpu := model.New(cfg, w, kernels.Default(), model.NewKVCacheNoMTP(cfg, 8, 16))
	dev := nudged{m: model.New(cfg, w, kernels.Default(), model.NewKVCacheNoMTP(cfg, 8, 16)), d: d}
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		Greedy{Lens: []int{3, 20}, Steps: 3, Rel: 1e-4, Seed: 1}.Check(r, dev, cpu)
	}()
	return r.errs
}

func TestGreedyPassesTheCPUAgainstItselfAndFailsALogitOffByMoreThanTheBound(t *testing.T) {
	t.Parallel()
	// The same model on both sides agrees bit for bit.
	if errs := run(t, 0); len(errs) > 0 {
		t.Errorf("the CPU against itself: %q", errs)
	}
	// One logit of every row off by 1 (logits of nano are O(1), so far
	// past 1e-4 of the largest): every row is reported.
	if errs := run(t, 1); len(errs) == 0 {
		t.Error("a logit off by 1 passed")
	}
}
