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
	// Run runs the eval.
	Run func(ctx context.Context, r *Runner, in Input) schema.EvalResult
}

// Evals are the evals in the order `eval all` runs them.
var Evals = []Eval{
	{
		Name:   "ppl",
		Load:   func(p string, _ int) (Data, error) { return LoadDocs(p) },
		Sample: func() Data { return SampleDocs() },
		Run:    func(ctx context.Context, r *Runner, in Input) schema.EvalResult { return PPL(ctx, r, in.Data.(*Docs)) },
	},
	{
		Name:   "long-ppl",
		Load:   func(p string, _ int) (Data, error) { return LoadDocs(p) },
		Sample: func() Data { return SampleDocs() },
		Run: func(ctx context.Context, r *Runner, in Input) schema.EvalResult {
			return LongPPL(ctx, r, in.Data.(*Docs))
		},
	},
	{
		Name:   "mmlu",
		Load:   func(p string, _ int) (Data, error) { return LoadMMLU(p) },
		Sample: func() Data { return SampleMMLU() },
		Run: func(ctx context.Context, r *Runner, in Input) schema.EvalResult {
			return MMLU(ctx, r, in.Data.(*MMLUSet))
		},
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
		Run: func(ctx context.Context, r *Runner, in Input) schema.EvalResult {
			return TriviaQA(ctx, r, in.Data.(*TriviaSet), in.Shots)
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
