package reports

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
)

func TestPlotsRenderAsPNGAndSVGOfTheExpectedSize(t *testing.T) {
	t.Parallel()
	ins := []*Input{
		run{label: "main", seed: 1, jitter: 0.03, specs: []bench.Spec{single, decodeMd}}.input("a"),
		run{label: "pr", seed: 2, jitter: 0.03, speed: 0.9, specs: []bench.Spec{single, decodeMd},
			fail: []schema.Class{schema.RateLimited, schema.RateLimited, schema.Stalled}}.input("b"),
		run{label: "pr", seed: 3, jitter: 0.03, speed: 0.9, specs: []bench.Spec{decodeMd}}.input("c"),
		{Path: "legacy.json", Report: &schema.Report{Label: "legacy"}, Legacy: true},
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, ins)
	if err != nil {
		t.Fatal(err)
	}
	// The single phase had no errors, so it has no errors figure.
	wantFigures(t, files, "single-ttft-cdf.png single-ttft-cdf.svg single-tpot-cdf.png single-tpot-cdf.svg "+
		"single-out-tput-time.png single-out-tput-time.svg "+
		"decode_medium-ttft-cdf.png decode_medium-ttft-cdf.svg decode_medium-tpot-cdf.png decode_medium-tpot-cdf.svg "+
		"decode_medium-out-tput-time.png decode_medium-out-tput-time.svg decode_medium-errors-time.png decode_medium-errors-time.svg")
	// SVG is byte-identical across renders, so a figure can be diffed.
	again := t.TempDir()
	if _, err := WritePlots(again, ins); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "decode_medium-errors-time.svg"))
	b, _ := os.ReadFile(filepath.Join(again, "decode_medium-errors-time.svg"))
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of one SVG differ")
	}
	for _, want := range []string{"pr #1: rate_limited", "pr #1: stalled"} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("errors figure lacks the legend %q", want)
		}
	}
}

func TestPlotsNeedRecords(t *testing.T) {
	t.Parallel()
	_, err := WritePlots(t.TempDir(), []*Input{{Path: "legacy.json", Report: &schema.Report{Label: "legacy"}, Legacy: true}})
	if !isBadInput(err) || !strings.Contains(err.Error(), "no records to plot") {
		t.Fatalf("got %v", err)
	}
}

// wantFigures fails t unless files are the figures want names (their base
// names, space-separated, in order), each a whole figure (checkFigures).
func wantFigures(t *testing.T, files []string, want string) {
	t.Helper()
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("wrote %s\nwant  %s", got, want)
	}
	checkFigures(t, files)
}

// checkFigures fails t unless every file is a whole figure of the figure
// size: a PNG of 768×480 that decodes, or an SVG of 576pt×360pt, neither
// under 1,000 bytes.
func checkFigures(t *testing.T, files []string) {
	t.Helper()
	svgSize := regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 1000 {
			t.Fatalf("%s: only %d bytes", f, len(b))
		}
		switch filepath.Ext(f) {
		case ".png":
			cfg, err := png.DecodeConfig(bytes.NewReader(b))
			if err != nil || cfg.Width != 768 || cfg.Height != 480 {
				t.Fatalf("%s: %dx%d (%v), want 768x480", f, cfg.Width, cfg.Height, err)
			}
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		case ".svg":
			if m := svgSize.FindSubmatch(b); m == nil || string(m[1]) != "576" || string(m[2]) != "360" {
				t.Fatalf("%s: size %q, want 576pt x 360pt", f, m)
			}
		}
	}
}
