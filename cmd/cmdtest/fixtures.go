package cmdtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// WriteFile writes content to name in a fresh temporary folder and returns
// its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// CountingEndpoint is a fake endpoint that counts every HTTP request to
// reach it, of any path (/v1/models too): a command refused before any load
// sends it none at all.
func CountingEndpoint(t testing.TB) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := endpointstest.New(nil, func(s *endpointstest.Server) {
		next := s.Config.Handler
		s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(srv.Close)
	return srv.BaseURL(), hits
}

// ReadFile is the content of the file name in dir (a command's output
// folder: reports.ReportMD, reports.ReportJSON); a file that cannot be read
// fails t.
func ReadFile(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WantRefused fails t unless a command exited 2 (cmdutil.ExitBadInput) with
// one line on stderr, "glmbench: " and a message saying each of want, and
// sent not one HTTP request to the endpoint whose requests hits counts.
func WantRefused(t testing.TB, code int, stderr string, hits *atomic.Int64, want ...string) {
	t.Helper()
	if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "glmbench: ") {
		t.Fatalf("exit %d, stderr %q; want exit 2 in one line", code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not say %q", stderr, w)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d HTTP requests reached the endpoint; want none", n)
	}
}

// Load is the report at path (a command's --out folder, or its report.json)
// with its records and samples, as reports.Load reads it; a report that
// cannot be read fails t.
func Load(t testing.TB, path string) *reports.Input {
	t.Helper()
	in, err := reports.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
