package reports

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// run describes a synthetic run: what the server did, not what it measured.
type run struct {
	label string
	seed  uint64
	// speed scales every duration: 0.9 is a build 10% slower.
	speed float64
	// jitter is each request's relative noise (±) on its TTFT; its decode
	// speed moves by a third of that, and each token gap by twice that, as
	// a real server's steps do.
	jitter float64
	specs  []bench.Spec
	// fail gives the first requests of every phase of more than one
	// request these classes.
	fail []schema.Class
}

// phaseRecords makes the records of one burst phase: every request sent at
// once, TTFT about 50 ms and TPOT about 10 ms, each with its own noise.
func (r run) phaseRecords(spec bench.Spec, rng *rand.Rand) []schema.Record {
	recs := make([]schema.Record, spec.N)
	for i := range recs {
		noise := func(j float64) float64 { return 1 + j*(2*rng.Float64()-1) }
		ttft := 0.05 * noise(r.jitter) / r.speed
		gap := 0.01 * noise(r.jitter/3) / r.speed
		rec := schema.Record{Phase: spec.Name, I: i, SendOffset: 0.001 * rng.Float64()}
		if i < len(r.fail) && spec.N > 1 {
			rec.Class = r.fail[i]
			end := ttft
			switch rec.Class {
			case schema.RateLimited:
				rec.Status, rec.Body, rec.RetryAfter = 429, `{"error":{"message":"Too Many Requests"}}`, "1"
			case schema.QueueFull:
				rec.Status, rec.Body = 503, `{"error":{"message":"The request queue is full."}}`
			case schema.Stalled:
				rec.TFirst, rec.Events = f(ttft), []float64{ttft, ttft + gap}
				rec.Detail = "no bytes within the stall timeout"
				end = ttft + 60
			}
			rec.TEnd = f(end)
			recs[i] = rec
			continue
		}
		rec.Events = make([]float64, spec.Out)
		t := ttft
		for k := range rec.Events {
			if k > 0 {
				t += gap * noise(2*r.jitter)
			}
			rec.Events[k] = t
		}
		rec.TFirst, rec.TLast = f(rec.Events[0]), f(rec.Events[spec.Out-1])
		rec.TEnd = f(*rec.TLast + 0.001)
		rec.N, rec.NSource, rec.Prompt, rec.Finish = spec.Out, schema.NFromUsage, spec.In, "length"
		recs[i] = rec
	}
	return recs
}

// build returns the run's report, summarised from its records as `run` does.
func (r run) build() (*schema.Report, []schema.Record) {
	if r.speed == 0 {
		r.speed = 1
	}
	rng := rand.New(rand.NewPCG(r.seed, 7))
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rep := &schema.Report{
		Schema: schema.ReportSchema, Tool: schema.Tool{Name: "glmbench", Version: "test"}, Label: r.label,
		StartedAt: at, FinishedAt: at.Add(time.Minute), Nonce: "0a1b2c3d",
		Options:  schema.Options{Arrival: "burst", IgnoreEOS: true},
		Endpoint: schema.Endpoint{BaseURL: "http://" + r.label + ":30000/v1", Model: "glm-5"},
		Phases:   []schema.PhaseResult{},
	}
	var all []schema.Record
	for _, spec := range r.specs {
		recs := r.phaseRecords(spec, rng)
		rep.Phases = append(rep.Phases, summary.Phase(spec.Name, spec.In, spec.Out, recs, schema.StatusComplete))
		all = append(all, recs...)
	}
	return rep, all
}

// input is the run as Load would return it, with a fixed path so golden
// files do not depend on temporary folders.
func (r run) input(path string) *Input {
	rep, recs := r.build()
	return &Input{Path: path, Report: rep, Records: recs}
}

// writeLoad writes rep and recs into dir with WriteDir, and ss, when not
// nil, into its metrics.jsonl with WriteMetricsFile, and loads the folder
// back with Load.
func writeLoad(t *testing.T, dir string, rep *schema.Report, recs []schema.Record, ss []schema.MetricsSample) *Input {
	t.Helper()
	if err := WriteDir(dir, rep, recs); err != nil {
		t.Fatal(err)
	}
	if ss != nil {
		if err := WriteMetricsFile(dir, ss); err != nil {
			t.Fatal(err)
		}
	}
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// loadBeside writes an empty report labelled label with WriteDir, puts
// body into the file name beside it, and returns Load's error.
func loadBeside(t *testing.T, label, name, body string) error {
	t.Helper()
	dir := t.TempDir()
	if err := WriteDir(dir, &schema.Report{Schema: schema.ReportSchema, Label: label}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	return err
}

// write puts the run on disk as `run` does and returns its folder.
func (r run) write(t *testing.T) string {
	t.Helper()
	rep, recs := r.build()
	dir := filepath.Join(t.TempDir(), r.label)
	if err := WriteDir(dir, rep, recs); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	single   = bench.Spec{Name: "single", N: 1, In: 256, Out: 64}
	decodeMd = bench.Spec{Name: "decode_medium", N: 64, In: 256, Out: 64}
)
