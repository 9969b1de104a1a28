package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// postProfile POSTs {} to url and returns the status and the answer's "file".
func postProfile(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		File string `json:"file"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	return resp.StatusCode, ans.File
}

// serve --profile-dir DIR turns the profiler routes on: a start and a stop
// leave one gzip-compressed pprof file in DIR, the one both answers name;
// without the flag both routes are 404.
func TestServeProfileDirTurnsTheProfilerRoutesOn(t *testing.T) {
	// Not parallel: the profile takes the process's one CPU profiler.
	dir := t.TempDir()
	var stdout, stderr cmdutil.SyncBuffer
	serveSim(t, &stdout, &stderr, "--profile-dir", dir, "--ready-file", "-")
	root := strings.TrimSuffix(await(t, "stdout", stdout.String).BaseURL, "/v1")
	code, file := postProfile(t, root+"/start_profile")
	if code != http.StatusOK || filepath.Dir(file) != dir {
		t.Fatalf("start: %d naming %q, want 200 naming a file in %s", code, file, dir)
	}
	if code, stopped := postProfile(t, root+"/stop_profile"); code != http.StatusOK || stopped != file {
		t.Fatalf("stop: %d naming %q, want 200 naming %s", code, stopped, file)
	}
	data, err := os.ReadFile(file)
	if err != nil || len(data) < 2 || !bytes.Equal(data[:2], []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, err %v; want a gzip pprof file", file, len(data), err)
	}

	var out2, err2 cmdutil.SyncBuffer
	serveSim(t, &out2, &err2, "--ready-file", "-")
	root = strings.TrimSuffix(await(t, "stdout", out2.String).BaseURL, "/v1")
	for _, path := range []string{"/start_profile", "/stop_profile"} {
		if code, _ := postProfile(t, root+path); code != http.StatusNotFound {
			t.Errorf("POST %s without --profile-dir: %d, want 404", path, code)
		}
	}
}
