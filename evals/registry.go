package evals

import (
	"bytes"
	"context"
	"embed"
	"io/fs"
	"sync"

	"github.com/glmbench/glmbench/reports/schema"
)

// Data is a loaded data set.
type Data interface {
	// Len is the number of items (documents, questions).
	Len() int
	// Origin says where the set came from: a path, or the embedded sample.
	Origin() string
}

// Input is what an eval runs on.
type Input struct {
	Data Data
	// Shots are TriviaQA's shots (nil: the first five items of Data;
	// SetTriviaShots says which).
	Shots *TriviaSet
}

// Job is one eval to run and its input.
type Job struct {
	Eval Eval
	In   Input
}

// Eval is one eval, by name.
type Eval struct {
	Name string
	// Load reads a data set from path; limit is the --limit in force, so a
	// streamed loader reads no more than it needs. Its errors are DataErrors.
	Load func(path string, limit int) (Data, error)
	// Sample returns the embedded sample set.
	Sample func() Data
	// Run runs the eval: its result, and its items as scored (one per
	// document or question, in data set order, their IDs the same in every
	// run: see items.go), nil when it gave no score.
	Run func(ctx context.Context, r *Runner, in Input) (schema.EvalResult, []schema.EvalItem)
}

// run is an eval's Run over its unexported function: the result finished
// (Runner.finish), the items as they came.
func run[D Data](f func(context.Context, *Runner, D) (schema.EvalResult, []schema.EvalItem)) func(context.Context, *Runner, Input) (schema.EvalResult, []schema.EvalItem) {
	return func(ctx context.Context, r *Runner, in Input) (schema.EvalResult, []schema.EvalItem) {
		res, items := f(ctx, r, in.Data.(D))
		return r.finish(res), items
	}
}

// Evals are the evals in the order `eval all` runs them.
var Evals = []Eval{
	{
		Name:   "ppl",
		Load:   func(p string, _ int) (Data, error) { return LoadDocs(p) },
		Sample: func() Data { return SampleDocs() },
		Run:    run(ppl),
	},
	{
		Name:   "long-ppl",
		Load:   func(p string, _ int) (Data, error) { return LoadDocs(p) },
		Sample: func() Data { return SampleDocs() },
		Run:    run(longPPL),
	},
	{
		Name:   "mmlu",
		Load:   func(p string, _ int) (Data, error) { return LoadMMLU(p) },
		Sample: func() Data { return SampleMMLU() },
		Run:    run(mmlu),
	},
	{
		Name: "triviaqa",
		Load: func(p string, limit int) (Data, error) {
			if limit <= 0 {
				limit = DefaultTriviaLimit
			}
			// The shots may come from the set itself: read five more.
			return LoadTriviaQA(p, limit+TriviaShots)
		},
		Sample: func() Data { return SampleTriviaQA() },
		Run: func(ctx context.Context, r *Runner, in Input) (schema.EvalResult, []schema.EvalItem) {
			res, items := triviaQA(ctx, r, in.Data.(*TriviaSet), in.Shots)
			return r.finish(res), items
		},
	},
}

// Lookup returns the eval named name.
func Lookup(name string) (Eval, bool) {
	for _, e := range Evals {
		if e.Name == name {
			return e, true
		}
	}
	return Eval{}, false
}

// Names lists the evals' names in order.
func Names() []string {
	out := make([]string, len(Evals))
	for i, e := range Evals {
		out[i] = e.Name
	}
	return out
}

// samples holds the sample sets, written for glmbench (no text comes from
// Wikipedia, MMLU or TriviaQA): four wiki-style documents, four MMLU-style
// subjects (one per category) of 5 dev and 4 test questions, and 25
// TriviaQA-style questions in the original JSON layout.
//
//go:embed data
var samples embed.FS

// SampleOrigin is the Origin of the embedded sets.
const SampleOrigin = "embedded sample"

var sampleOnce = sync.OnceValues(func() (*Docs, *MMLUSet) {
	b, _ := samples.ReadFile("data/wiki.jsonl")
	docs, err := ParseDocs("wiki.jsonl", bytes.NewReader(b))
	if err != nil {
		panic("evals: embedded sample: " + err.Error())
	}
	sub, _ := fs.Sub(samples, "data/mmlu")
	set, err := loadMMLUFS(sub, "mmlu")
	if err != nil {
		panic("evals: embedded sample: " + err.Error())
	}
	set.From = SampleOrigin
	return &Docs{From: SampleOrigin, Docs: docs}, set
})

// SampleDocs returns the embedded documents (for ppl and long-ppl).
func SampleDocs() *Docs {
	d, _ := sampleOnce()
	return d
}

// SampleMMLU returns the embedded MMLU-style subjects.
func SampleMMLU() *MMLUSet {
	_, s := sampleOnce()
	return s
}

// SampleTriviaQA returns the embedded TriviaQA-style questions.
func SampleTriviaQA() *TriviaSet {
	b, _ := samples.ReadFile("data/triviaqa.json")
	set, err := ParseTriviaQA("triviaqa.json", bytes.NewReader(b), 0)
	if err != nil {
		panic("evals: embedded sample: " + err.Error())
	}
	set.From = SampleOrigin
	return set
}
