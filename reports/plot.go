package reports

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// Every figure is PlotWidth × PlotHeight; PNGs are rendered at PlotDPI, so
// they are 768 × 480 pixels, and SVGs say width="576pt" height="360pt".
const (
	PlotWidth  = 8 * vg.Inch
	PlotHeight = 5 * vg.Inch
	PlotDPI    = 96
)

// timeBins is how many buckets a phase's time axis is cut into for the
// throughput plot: fine enough to show a ramp, coarse enough that each
// bucket holds several events.
const timeBins = 60

// WritePlots renders, for each phase, from the records of ins, a PNG and an
// SVG of: the TTFT and TPOT CDFs with one line per label (runs of a label
// pooled), output tokens/s over time and cumulative errors over time by
// class (one line per run). It returns the files written, in order. Inputs
// without records (legacy files, reports without requests.jsonl) are left
// out; if none has records it fails (bad input).
func WritePlots(dir string, ins []*Input) ([]string, error) {
	var withRecs []*Input
	for _, in := range ins {
		if len(in.Records) > 0 {
			withRecs = append(withRecs, in)
		}
	}
	if len(withRecs) == 0 {
		return nil, badinput.Errorf("no records to plot: plots are drawn from the requests.jsonl beside a report.json, and none of the reports has one")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var phases []string
	for _, in := range withRecs {
		for _, rec := range in.Records {
			if !slices.Contains(phases, rec.Phase) {
				phases = append(phases, rec.Phase)
			}
		}
	}
	var written []string
	for _, ph := range phases {
		for _, fig := range []struct {
			name string
			make func(string, []*Input) *plot.Plot
		}{
			{"ttft-cdf", func(ph string, ins []*Input) *plot.Plot {
				return recordCDF(ph, ins, "TTFT", "TTFT (s)", ttftSeconds)
			}},
			{"tpot-cdf", func(ph string, ins []*Input) *plot.Plot {
				return recordCDF(ph, ins, "TPOT", "TPOT (ms)", tpotMillis)
			}},
			{"out-tput-time", outTputOverTime},
			{"errors-time", errorsOverTime},
		} {
			p := fig.make(ph, withRecs)
			if p == nil {
				continue
			}
			base := filepath.Join(dir, fileSafe(ph)+"-"+fig.name)
			for _, ext := range []string{".png", ".svg"} {
				if err := savePlot(p, base+ext); err != nil {
					return written, err
				}
				written = append(written, base+ext)
			}
		}
	}
	return written, nil
}

var unsafeFile = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func fileSafe(s string) string {
	if s = unsafeFile.ReplaceAllString(s, "-"); s == "" {
		return "phase"
	}
	return s
}

// savePlot writes p as PNG or SVG by path's extension, through a temporary
// file so a failed render leaves no half figure.
func savePlot(p *plot.Plot, path string) error {
	return writeAtomic(filepath.Dir(path), filepath.Base(path), func(w io.Writer) error {
		return RenderPlot(w, p, filepath.Ext(path))
	})
}

// RenderPlot draws p at the figure size as ".png" or ".svg".
func RenderPlot(w io.Writer, p *plot.Plot, ext string) error {
	c, err := figureCanvas(ext)
	if err != nil {
		return err
	}
	p.Draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// canvas is a figure being drawn, which writes itself out once drawn.
type canvas interface {
	vg.CanvasSizer
	io.WriterTo
}

// figureCanvas is a canvas of the figure size for ".png" or ".svg".
func figureCanvas(ext string) (canvas, error) {
	switch ext {
	case ".png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(PlotWidth, PlotHeight), vgimg.UseDPI(PlotDPI))}, nil
	case ".svg":
		return vgsvg.New(PlotWidth, PlotHeight), nil
	}
	return nil, fmt.Errorf("no renderer for %q", ext)
}

// series is one line of a figure.
type series struct {
	name string
	xys  plotter.XYs
}

// byLabel pools the records of phase over the runs of each label, in the
// order labels first appear.
func byLabel(phase string, ins []*Input) (labels []string, recs map[string][]schema.Record) {
	recs = map[string][]schema.Record{}
	for _, in := range ins {
		l := in.Report.Label
		if _, ok := recs[l]; !ok {
			labels = append(labels, l)
			recs[l] = nil
		}
		for _, r := range in.Records {
			if r.Phase == phase {
				recs[l] = append(recs[l], r)
			}
		}
	}
	return labels, recs
}

// runName names a run in a legend: its label, numbered when the label has
// several runs.
func runNames(ins []*Input) []string {
	count := map[string]int{}
	for _, in := range ins {
		count[in.Report.Label]++
	}
	seen := map[string]int{}
	out := make([]string, len(ins))
	for i, in := range ins {
		l := in.Report.Label
		seen[l]++
		out[i] = l
		if count[l] > 1 {
			out[i] = fmt.Sprintf("%s #%d", l, seen[l])
		}
	}
	return out
}

func cdf(xs []float64) plotter.XYs {
	slices.Sort(xs)
	out := make(plotter.XYs, len(xs))
	for i, x := range xs {
		out[i] = plotter.XY{X: x, Y: float64(i+1) / float64(len(xs))}
	}
	return out
}

// recordCDF plots, per label, the CDF of sample over the phase's completed
// requests; a request sample gives no value for (ok false) is left out.
func recordCDF(phase string, ins []*Input, metric, axis string, sample func(*schema.Record) (float64, bool)) *plot.Plot {
	labels, recs := byLabel(phase, ins)
	var ss []series
	for _, l := range labels {
		var xs []float64
		for i := range recs[l] {
			r := &recs[l][i]
			if !r.Completed() {
				continue
			}
			if x, ok := sample(r); ok {
				xs = append(xs, x)
			}
		}
		if len(xs) > 0 {
			ss = append(ss, series{l, cdf(xs)})
		}
	}
	return linePlot(phase+": "+metric+" CDF", axis, "fraction of completed requests", ss, plotter.NoStep, false)
}

// ttftSeconds is a request's TTFT in seconds.
func ttftSeconds(r *schema.Record) (float64, bool) {
	if r.TFirst == nil {
		return 0, false
	}
	return *r.TFirst, true
}

// tpotMillis is a request's TPOT in milliseconds.
func tpotMillis(r *schema.Record) (float64, bool) {
	v, ok := r.TPOT()
	return v * 1e3, ok
}

// outTputOverTime buckets every content event by when it arrived (seconds
// from the phase start) and plots output tokens/s per bucket. An event of a
// completed request carries n / events tokens (more than one when a server
// packs tokens); others carry one.
func outTputOverTime(phase string, ins []*Input) *plot.Plot {
	var ss []series
	names := runNames(ins)
	for k, in := range ins {
		type ev struct{ t, tok float64 }
		var evs []ev
		end := 0.0
		for _, r := range in.Records {
			if r.Phase != phase || r.NotSent || len(r.Events) == 0 {
				continue
			}
			per := 1.0
			if r.Completed() && r.N > 0 {
				per = float64(r.N) / float64(len(r.Events))
			}
			for _, e := range r.Events {
				t := r.SendOffset + e
				evs = append(evs, ev{t, per})
				end = max(end, t)
			}
		}
		if len(evs) == 0 || end <= 0 {
			continue
		}
		width := end / timeBins
		tok := make([]float64, timeBins)
		for _, e := range evs {
			tok[min(int(e.t/width), timeBins-1)] += e.tok
		}
		xys := make(plotter.XYs, timeBins)
		for i := range tok {
			xys[i] = plotter.XY{X: (float64(i) + 0.5) * width, Y: tok[i] / width}
		}
		ss = append(ss, series{names[k], xys})
	}
	return linePlot(phase+": output tokens/s over time", "seconds from the phase start", "output tokens/s", ss, plotter.NoStep, true)
}

// errorsOverTime plots, per run and class, the count of failed requests by
// the time each failure ended (seconds from the phase start). A phase
// without errors gets no figure.
func errorsOverTime(phase string, ins []*Input) *plot.Plot {
	var ss []series
	names := runNames(ins)
	for k, in := range ins {
		times := map[schema.Class][]float64{}
		for _, r := range in.Records {
			if r.Phase != phase || r.Class == "" {
				continue
			}
			t := r.SendOffset
			if r.TEnd != nil {
				t += *r.TEnd
			}
			times[r.Class] = append(times[r.Class], t)
		}
		for _, cl := range schema.Classes {
			ts := times[cl]
			if len(ts) == 0 {
				continue
			}
			slices.Sort(ts)
			xys := plotter.XYs{{X: 0, Y: 0}}
			for i, t := range ts {
				xys = append(xys, plotter.XY{X: t, Y: float64(i + 1)})
			}
			ss = append(ss, series{names[k] + ": " + string(cl), xys})
		}
	}
	return linePlot(phase+": errors over time by class", "seconds from the phase start", "failed requests (cumulative)", ss, plotter.PostStep, true)
}

// linePlot draws ss as lines, each its own colour and dash, or returns nil
// when there is nothing to draw.
func linePlot(title, x, y string, ss []series, step plotter.StepKind, legendTop bool) *plot.Plot {
	if len(ss) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = legendTop
	for i, s := range ss {
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			// NewLine refuses only NaN or infinite points, which records
			// never give; skip such a series rather than fail the figure.
			continue
		}
		l.StepStyle = step
		l.Color = plotColor(i)
		l.Dashes = plotutil.Dashes(i / len(palette))
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	return p
}

// palette is Okabe and Ito's colour-blind-safe set.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
}

func plotColor(i int) color.Color { return palette[i%len(palette)] }
