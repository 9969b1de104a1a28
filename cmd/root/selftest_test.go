package root

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
)

// asMain makes this test binary act as glmbench itself when started with it
// set, so that selftest can start "this binary" as its server child.
const asMain = "GLMBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

func TestSelftestMeasuresTheClientAgainstTheServersTruth(t *testing.T) {
	t.Setenv(asMain, "1") // the child server inherits it
	dir := t.TempDir()
	args := []string{"selftest", "--levels", "4,16", "--tokens", "12", "--out", dir}
	python := ""
	if p, err := exec.LookPath("/usr/bin/python3"); err == nil && exec.Command(p, "-c", "import httpx").Run() == nil {
		python = p
		args = append(args, "--python", p)
	}
	code, stdout, stderr := execute(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b := cmdtest.ReadFile(t, dir, "selftest.json")
	var res struct {
		Levels []map[string]any `json:"levels"`
		Python []map[string]any `json:"python_httpx"`
	}
	if err := json.Unmarshal([]byte(b), &res); err != nil {
		t.Fatal(err)
	}
	check := func(who string, levels []map[string]any) {
		if len(levels) != 2 {
			t.Fatalf("%s: %d levels, want 2: %s", who, len(levels), b)
		}
		for i, lv := range levels {
			streams := []float64{4, 16}[i]
			if lv["streams"] != streams || lv["errors"] != 0.0 || lv["matched_requests"] != streams {
				t.Errorf("%s level %d: %v", who, i, lv)
			}
			// Every request's 12 tokens arrived in 1 to 12 events (a server
			// that falls behind sends the tokens it has in one event).
			if ev, _ := lv["events"].(float64); ev < streams || ev > 12*streams {
				t.Errorf("%s level %d: %v events, want %v to %v", who, i, lv["events"], streams, 12*streams)
			}
			for _, k := range []string{"events_per_sec", "client_cpu_per_1k_events", "ttft_err_p50_ms", "ttft_err_p99_ms", "iet_err_p99_ms"} {
				v, ok := lv[k].(float64)
				bad := !ok || v < -1000 || v > 1000 // ms errors and CPU per 1k events are small
				if k == "events_per_sec" {
					bad = !ok || v <= 0
				}
				if bad {
					t.Errorf("%s level %d: %s = %v", who, i, k, lv[k])
				}
			}
			if _, ok := lv["saturated"].(bool); !ok {
				t.Errorf("%s level %d: saturated = %v", who, i, lv["saturated"])
			}
		}
	}
	check("glmbench", res.Levels)
	if python != "" {
		check("httpx", res.Python)
	}
	if !strings.Contains(stdout, "selftest.json") {
		t.Errorf("stdout: %s", stdout)
	}
	// The truth file holds one line per request the server answered.
	truth := cmdtest.ReadFile(t, dir, "truth.jsonl")
	want := 20
	if python != "" {
		want = 40
	}
	if n := strings.Count(truth, "\n"); n < want {
		t.Errorf("truth.jsonl has %d lines, want at least %d", n, want)
	}
}
