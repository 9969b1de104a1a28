package cmdtest

import (
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
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
