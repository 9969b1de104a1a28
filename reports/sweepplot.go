package reports

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/glmbench/glmbench/reports/schema"
)

// WriteSweepPlots renders, for each sweep name in reps, a PNG and an SVG of:
// the Pareto frontier (output tokens/s per user against total output
// tokens/s), TTFT p99 against load and attainment against load, one line per
// report (its label). It returns the files written; none when no report has
// a sweep.
func WriteSweepPlots(dir string, reps ...*schema.Report) ([]string, error) {
	names := sweepNames(reps)
	if len(names) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, name := range names {
		for _, fig := range []struct {
			name string
			make func(string, []*schema.Report) *plot.Plot
		}{
			{"pareto", paretoPlot},
			{"ttft-p99-load", func(n string, reps []*schema.Report) *plot.Plot {
				return sweepLine(n, reps, "TTFT p99 against load", "TTFT p99 (s)", func(p *schema.SweepPoint) *float64 { return p.TTFTP99 })
			}},
			{"attainment-load", func(n string, reps []*schema.Report) *plot.Plot {
				return sweepLine(n, reps, "SLO attainment against load", "attainment", func(p *schema.SweepPoint) *float64 { return p.SLOAttainment })
			}},
		} {
			p := fig.make(name, reps)
			if p == nil {
				continue
			}
			for _, ext := range []string{".png", ".svg"} {
				path := filepath.Join(dir, fileSafe("sweep-"+name+"-"+fig.name)+ext)
				if err := savePlot(p, path); err != nil {
					return written, err
				}
				written = append(written, path)
			}
		}
	}
	return written, nil
}

// sweepNames are the names of reps' sweeps, each once, in first-seen order.
func sweepNames(reps []*schema.Report) []string {
	var names []string
	for _, r := range reps {
		for _, s := range r.Sweeps {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// sweepOf is the sweep name of r, or nil.
func sweepOf(r *schema.Report, name string) *schema.SweepResult {
	for i := range r.Sweeps {
		if r.Sweeps[i].Name == name {
			return &r.Sweeps[i]
		}
	}
	return nil
}

// sortedPoints are s's points in load order (auto measures them out of it).
func sortedPoints(s *schema.SweepResult) []schema.SweepPoint {
	pts := slices.Clone(s.Points)
	slices.SortStableFunc(pts, func(a, b schema.SweepPoint) int { return cmp.Compare(a.Load, b.Load) })
	return pts
}

// paretoPlot is each report's frontier: per-user speed against total
// throughput, a point per load.
func paretoPlot(name string, reps []*schema.Report) *plot.Plot {
	var ss []series
	for _, r := range reps {
		s := sweepOf(r, name)
		if s == nil {
			continue
		}
		var xys plotter.XYs
		for _, p := range sortedPoints(s) {
			if p.OutTputPerUser != nil {
				xys = append(xys, plotter.XY{X: p.OutTput, Y: *p.OutTputPerUser})
			}
		}
		if len(xys) > 0 {
			ss = append(ss, series{name: r.Label, xys: xys})
		}
	}
	p := linePlot("Sweep "+name+": tokens/s per user against total tokens/s", "output tokens/s (total)", "output tokens/s per user (median 1/TPOT)", ss, plotter.NoStep, true)
	if p != nil {
		p.X.Min = 0
	}
	return p
}

// sweepLine plots one point metric against load, a line per report.
func sweepLine(name string, reps []*schema.Report, title, axis string, value func(*schema.SweepPoint) *float64) *plot.Plot {
	var ss []series
	x := "load"
	for _, r := range reps {
		s := sweepOf(r, name)
		if s == nil {
			continue
		}
		x = s.Mode
		if s.Mode == schema.SweepRate {
			x = "request rate (req/s)"
		}
		var xys plotter.XYs
		for _, p := range sortedPoints(s) {
			if v := value(&p); v != nil {
				xys = append(xys, plotter.XY{X: p.Load, Y: *v})
			}
		}
		if len(xys) > 0 {
			ss = append(ss, series{name: r.Label, xys: xys})
		}
	}
	return linePlot("Sweep "+name+": "+title, x, axis, ss, plotter.NoStep, true)
}
