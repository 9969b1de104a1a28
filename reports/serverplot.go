package reports

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
)

// WriteServerPlots renders, for each phase (and sweep point) of samples, a
// PNG and an SVG of the server's gauges over it, from the answered scrapes'
// T (seconds from the phase start): running and queued requests above, KV
// cache usage in percent below (a panel the server exposes no series for is
// left out). Files are named <phase>-server (a sweep point's
// <sweep>-p<point>-server); it returns those written, in order. A phase
// without any of the three series gets no figure, and samples without any
// give none and no error: not every server has metrics.
func WriteServerPlots(dir string, samples []schema.MetricsSample) ([]string, error) {
	keys, groups := serverside.Group(samples)
	var written []string
	for _, k := range keys {
		panels := serverPanels(k, groups[k])
		if len(panels) == 0 {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return written, err
		}
		name := fileSafe(k.Phase)
		if k.Point != 0 {
			name += fmt.Sprintf("-p%d", k.Point)
		}
		base := filepath.Join(dir, name+"-server")
		for _, ext := range []string{".png", ".svg"} {
			err := writeAtomic(dir, filepath.Base(base+ext), func(w io.Writer) error { return renderPanels(w, panels, ext) })
			if err != nil {
				return written, err
			}
			written = append(written, base+ext)
		}
	}
	return written, nil
}

// serverPanels are the figure's panels for one phase's scrapes: requests
// running and queued, and KV usage in percent; nil when it has neither.
func serverPanels(k serverside.Key, ss []schema.MetricsSample) []*plot.Plot {
	var ok []schema.MetricsSample
	for _, s := range ss {
		if s.Error == "" {
			ok = append(ok, s)
		}
	}
	slices.SortStableFunc(ok, func(a, b schema.MetricsSample) int { return cmp.Compare(a.T, b.T) })
	line := func(name string, scale float64) (series, bool) {
		var xys plotter.XYs
		for _, s := range ok {
			if v, found := s.Values[name]; found && isFinite(v) && isFinite(s.T) {
				xys = append(xys, plotter.XY{X: s.T, Y: v * scale})
			}
		}
		return series{name, xys}, len(xys) > 0
	}
	title := k.Phase
	if k.Point != 0 {
		title += fmt.Sprintf(" point %d", k.Point)
	}
	var panels []*plot.Plot
	var reqs []series
	if s, found := line(schema.SrvRunning, 1); found {
		s.name = "running"
		reqs = append(reqs, s)
	}
	if s, found := line(schema.SrvQueued, 1); found {
		s.name = "queued"
		reqs = append(reqs, s)
	}
	if p := linePlot(title+": the server's requests over the phase", "seconds from the phase start", "requests", reqs, plotter.NoStep, true); p != nil {
		panels = append(panels, p)
	}
	if s, found := line(schema.SrvKVUsage, 100); found {
		s.name = "KV cache usage"
		if p := linePlot(title+": the server's KV cache usage", "seconds from the phase start", "KV cache in use (%)", []series{s}, plotter.NoStep, true); p != nil {
			p.Y.Max = max(p.Y.Max, 100)
			panels = append(panels, p)
		}
	}
	return panels
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// renderPanels draws panels stacked, one above the other with their axes
// aligned, at the figure size as ".png" or ".svg".
func renderPanels(w io.Writer, panels []*plot.Plot, ext string) error {
	c, err := figureCanvas(ext)
	if err != nil {
		return err
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	_, err = c.WriteTo(w)
	return err
}
