package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func TestServerPlotsAreWrittenPerPhaseAsPNGAndSVG(t *testing.T) {
	t.Parallel()
	_, _, ss := serverRun(t)
	ss = append(ss,
		// Counters only: nothing to plot.
		schema.MetricsSample{Phase: "counters", T: 0, Values: map[string]float64{schema.SrvRequests: 1}},
		schema.MetricsSample{Phase: "counters", T: 1, Values: map[string]float64{schema.SrvRequests: 2}},
		// A sweep point whose server exposes queued requests alone; a failed scrape is skipped.
		schema.MetricsSample{Phase: "sweep", Point: 3, T: 0, Values: map[string]float64{schema.SrvQueued: 4}},
		schema.MetricsSample{Phase: "sweep", Point: 3, T: 1, Error: "timeout"},
		schema.MetricsSample{Phase: "sweep", Point: 3, T: 2, Values: map[string]float64{schema.SrvQueued: 1}},
	)
	dir := t.TempDir()
	files, err := WriteServerPlots(dir, ss)
	if err != nil {
		t.Fatal(err)
	}
	wantFigures(t, files, "decode_medium-server.png decode_medium-server.svg sweep-p3-server.png sweep-p3-server.svg")
	full, _ := os.ReadFile(filepath.Join(dir, "decode_medium-server.svg"))
	for _, want := range []string{"running", "queued", "KV cache usage", "KV cache in use (%)"} {
		if !bytes.Contains(full, []byte(want)) {
			t.Errorf("decode_medium's figure lacks %q", want)
		}
	}
	queued, _ := os.ReadFile(filepath.Join(dir, "sweep-p3-server.svg"))
	if !bytes.Contains(queued, []byte("queued")) || bytes.Contains(queued, []byte("KV cache")) || bytes.Contains(queued, []byte(">running<")) {
		t.Error("the sweep point's figure should show queued requests alone")
	}
}

func TestNoScrapesGiveNoServerPlotAndNoError(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "plots")
	files, err := WriteServerPlots(dir, nil)
	if err != nil || len(files) != 0 {
		t.Fatalf("files %v, err %v", files, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("made %s for no figure", dir)
	}
}
