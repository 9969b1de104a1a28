package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
	"github.com/glmbench/glmbench/reports/slo"
	"github.com/glmbench/glmbench/reports/summary"
)

// Input is one report as read from disk.
type Input struct {
	// Path is what was given: a report.json, a folder or a legacy file.
	Path   string
	Report *schema.Report
	// Records are the requests.jsonl beside the report, or nil.
	Records []schema.Record
	// Legacy is set for the older harness's list of rows.
	Legacy bool
	// Recomputed names the phases whose metrics were recomputed from Records.
	Recomputed []string
	// Samples are the metrics.jsonl beside the report (the scrapes of the
	// server's metrics), or nil; the phases' server blocks are recomputed
	// from them.
	Samples []schema.MetricsSample
	// Items are the evals.jsonl beside the report (each eval's items as
	// scored), or nil; reports pair two runs' evals by them.
	Items []schema.EvalItem
	// Warnings say what was read but not used, one line each.
	Warnings []string
}

// Load reads one report: a report.json, a folder holding one, or a legacy
// JSON list of rows. A requests.jsonl beside a report.json (or in the folder)
// is read too, and every phase it holds records for is recomputed from them
// with summary.Phase, so a report can be re-made offline; likewise a
// metrics.jsonl, from which each phase's server block is recomputed with
// serverside.Stats, the rest of the phase kept; and an evals.jsonl, into
// Items. A requests.jsonl, metrics.jsonl or evals.jsonl beside a file of
// another name is not read: it may belong to another run.
func Load(path string) (*Input, error) {
	if path == "" {
		return nil, badinput.Errorf("empty report path")
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, badinput.Errorf("%s: no such file or folder", path)
		}
		return nil, badinput.Errorf("%s: %v", path, unwrapPath(err))
	}
	file := path
	if st.IsDir() {
		file = filepath.Join(path, ReportJSON)
	}
	data, err := boundedfile.Read(file, MaxReportFile, "a report.json")
	var big *boundedfile.TooBigError
	if err != nil {
		if errors.As(err, &big) {
			return nil, badinput.Errorf("%s", big)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, badinput.Errorf("%s: folder holds no %s", path, ReportJSON)
		}
		return nil, badinput.Errorf("%s: %v", file, unwrapPath(err))
	}
	in := &Input{Path: path}
	if in.Report, in.Legacy, err = decode(file, data); err != nil {
		return nil, err
	}
	if in.Legacy {
		return in, nil
	}
	if filepath.Base(file) != ReportJSON {
		return in, nil
	}
	dir := filepath.Dir(file)
	var found bool
	if in.Records, found, err = readSidecar(filepath.Join(dir, RecordsJSONL), ReadRecords); err != nil {
		return nil, err
	}
	if found {
		recompute(in)
	}
	if in.Samples, found, err = readSidecar(filepath.Join(dir, MetricsJSONL), ReadMetrics); err != nil {
		return nil, err
	}
	if found {
		recomputeServer(in)
	}
	if in.Items, _, err = readSidecar(filepath.Join(dir, EvalsJSONL), ReadEvalItems); err != nil {
		return nil, err
	}
	return in, nil
}

// MaxReportFile is the most bytes of a report.json read: per-request
// records are in requests.jsonl, beside it, so a report of every phase with
// its time series is well under 16 MiB, and 256 MiB leaves room for any
// real one while /dev/zero or a weights file given by mistake is refused
// in one line instead of read whole until out of memory.
const MaxReportFile = 256 << 20

// readSidecar reads the file at path, one of the JSONL files beside a
// report.json, with read. A missing file is not an error: found is false.
// Any other fault, opening or reading, is bad input naming the file.
func readSidecar[T any](path string, read func(io.Reader) ([]T, error)) (vals []T, found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, badinput.Errorf("%s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	if vals, err = read(f); err != nil {
		return nil, false, badinput.Errorf("%s: %v", path, err)
	}
	return vals, true, nil
}

// recomputeServer replaces the server block of every phase, and of every
// sweep point, that has scrapes in Samples with serverside.Stats of them;
// the others keep theirs. A phase's scrapes are those of its name and
// point 0, a sweep point's those of the sweep's name and its point.
func recomputeServer(in *Input) {
	keys, groups := serverside.Group(in.Samples)
	known := map[serverside.Key]bool{}
	for i := range in.Report.Phases {
		ph := &in.Report.Phases[i]
		k := serverside.Key{Phase: ph.Phase}
		known[k] = true
		if ss := groups[k]; len(ss) > 0 {
			ph.Server = serverside.Stats(ss)
		}
	}
	for i := range in.Report.Sweeps {
		sw := &in.Report.Sweeps[i]
		for j := range sw.Points {
			p := &sw.Points[j]
			k := serverside.Key{Phase: sw.Name, Point: p.Point}
			known[k] = true
			if ss := groups[k]; len(ss) > 0 {
				p.Server = serverside.Stats(ss)
			}
		}
	}
	for _, k := range keys {
		if known[k] {
			continue
		}
		what := "phase " + k.Phase
		if k.Point != 0 {
			what = fmt.Sprintf("sweep %s point %d", k.Phase, k.Point)
		}
		in.Warnings = append(in.Warnings, fmt.Sprintf("%s: scrapes of %s, which the report does not have, are ignored", in.Path, what))
	}
}

// LoadAll loads each path; a path may be a comma-separated list.
func LoadAll(paths []string) ([]*Input, error) {
	var out []*Input
	for _, p := range SplitList(paths) {
		in, err := Load(p)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// SplitList splits comma-separated values and drops empty ones, as list
// flags take "a,b" and "--x a --x b" alike.
func SplitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// ItemsOf returns the eval items of ins, one list per input (nil where it
// has none), as gate.Options takes them.
func ItemsOf(ins []*Input) [][]schema.EvalItem {
	out := make([][]schema.EvalItem, len(ins))
	for i, in := range ins {
		out[i] = in.Items
	}
	return out
}

// Reports returns the reports of ins.
func Reports(ins []*Input) []*schema.Report {
	out := make([]*schema.Report, len(ins))
	for i, in := range ins {
		out[i] = in.Report
	}
	return out
}

// decode reads a report.json or, for a JSON list, the older harness's rows.
func decode(file string, data []byte) (r *schema.Report, legacy bool, err error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return nil, false, badinput.Errorf("%s: empty file", file)
	case trimmed[0] == '[':
		r, err = ParseLegacy(file, data)
		return r, true, err
	case trimmed[0] != '{':
		return nil, false, badinput.Errorf("%s: not a report (want a JSON object, or a legacy JSON list of rows)", file)
	}
	r, err = parseReport(file, data)
	return r, false, err
}

func parseReport(file string, data []byte) (*schema.Report, error) {
	var r schema.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, jsonErr(file, data, err)
	}
	if r.Schema != schema.ReportSchema {
		return nil, badinput.Errorf("%s: schema %q, want %q", file, r.Schema, schema.ReportSchema)
	}
	for i := range r.Phases {
		if r.Phases[i].Phase == "" {
			return nil, badinput.Errorf("%s: phase %d has no name", file, i+1)
		}
	}
	return &r, nil
}

// recompute replaces the figures of every phase that has records with those
// summary.Phase computes from them. A phase whose record count is not its
// batch_size keeps its stored figures: the records are not all of it.
func recompute(in *Input) {
	byPhase := map[string][]schema.Record{}
	var order []string
	for _, rec := range in.Records {
		if _, ok := byPhase[rec.Phase]; !ok {
			order = append(order, rec.Phase)
		}
		byPhase[rec.Phase] = append(byPhase[rec.Phase], rec)
	}
	set, sloErr := slo.ParseAll(in.Report.Options.SLOs)
	if sloErr != nil {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%s: options.slos: %v; the phases' stored SLO figures are used", in.Path, sloErr))
	}
	known := map[string]bool{}
	for i := range in.Report.Phases {
		ph := &in.Report.Phases[i]
		known[ph.Phase] = true
		recs := byPhase[ph.Phase]
		switch {
		case len(recs) == 0:
			continue
		case len(recs) != ph.BatchSize:
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s: phase %s has %d records but batch_size %d; its stored figures are used",
				in.Path, ph.Phase, len(recs), ph.BatchSize))
			continue
		}
		fresh := summary.Phase(ph.Phase, ph.InputLen, ph.OutputLen, recs, ph.Status)
		// What records cannot tell is kept from the stored phase: the
		// calibration, the arrival and the workload kind. The cache block and
		// the prompt drift are the records' own, so they are recomputed.
		fresh.CalibratedInputLen, fresh.Concurrency, fresh.RequestRate = ph.CalibratedInputLen, ph.Concurrency, ph.RequestRate
		fresh.Workload = ph.Workload
		fresh.Server = ph.Server // the scrapes', not the records'
		fresh.Agents = ph.Agents // the agents' clocks and shares
		switch {
		case sloErr != nil:
			fresh.SLOMet, fresh.Goodput, fresh.SLOAttainment = ph.SLOMet, ph.Goodput, ph.SLOAttainment
		case len(set) > 0:
			set.Apply(&fresh, recs, fresh.WallSec)
		}
		*ph = fresh
		in.Recomputed = append(in.Recomputed, ph.Phase)
	}
	for i := range in.Report.Sweeps {
		known[in.Report.Sweeps[i].Name] = true
		recomputeSweep(in, &in.Report.Sweeps[i], byPhase[in.Report.Sweeps[i].Name])
	}
	for _, name := range order {
		if !known[name] {
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s: records of phase %s, which the report does not have, are ignored", in.Path, name))
		}
	}
}

// recomputeSweep re-makes each point of s that has records, and the
// capacity, from the records alone (each carries its point and window).
func recomputeSweep(in *Input, s *schema.SweepResult, recs []schema.Record) {
	if len(recs) == 0 {
		return
	}
	set, err := slo.ParseAll(s.SLOs)
	if err != nil {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%s: sweep %s: %v; its stored figures are used", in.Path, s.Name, err))
		return
	}
	byPoint := map[int][]schema.Record{}
	for _, r := range recs {
		byPoint[r.Point] = append(byPoint[r.Point], r)
	}
	w := slo.Window{Warmup: s.WarmupSec, Duration: s.DurationSec, Slice: s.SliceSec}
	spec := schema.PhaseResult{Phase: s.Name, InputLen: s.InputLen, OutputLen: s.OutputLen}
	for i := range s.Points {
		p := &s.Points[i]
		if len(byPoint[p.Point]) == 0 {
			continue
		}
		fresh := slo.Point(p.Point, p.Load, spec, byPoint[p.Point], w, set, s.Attainment, p.Status)
		// What records cannot tell is kept from the stored point.
		fresh.CalibratedInputLen, fresh.Concurrency, fresh.RequestRate = p.CalibratedInputLen, p.Concurrency, p.RequestRate
		fresh.Workload = p.Workload
		fresh.Server = p.Server
		*p = fresh
	}
	s.Capacity = slo.Capacity(s.Points)
	in.Recomputed = append(in.Recomputed, s.Name)
}

// unwrapPath drops the *fs.PathError wrapper, whose text repeats the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteWarnings writes what loading the reports ins warned of, one
// "glmbench: warning:" line each.
func WriteWarnings(w io.Writer, ins []*Input) {
	for _, in := range ins {
		for _, msg := range in.Warnings {
			fmt.Fprintf(w, "glmbench: warning: %s\n", msg)
		}
	}
}
