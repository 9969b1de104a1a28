package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/badinput"
)

// serveSim runs `glmbench serve --executor sim --port 0` with extra args
// until stop is called, which returns Run's error.
func serveSim(t *testing.T, stdout, stderr *cmdutil.SyncBuffer, args ...string) (stop func() error) {
	t.Helper()
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: stderr}}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewCmdServe(f, nil)
	cmd.SetArgs(append([]string{"--executor", "sim", "--host", "127.0.0.1", "--port", "0"}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// await polls read until it gives a line or 30 s pass.
func await(t *testing.T, what string, read func() string) Ready {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := read(); s != "" {
			if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
				t.Fatalf("%s holds %q, want one line", what, s)
			}
			var r Ready
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				t.Fatalf("%s holds %q: %v", what, s, err)
			}
			return r
		}
	}
	t.Fatalf("%s stayed empty for 30 s", what)
	return Ready{}
}

// checkListens checks that r names the server that answers: the model its
// /v1/models lists, at the address its log line gives.
func checkListens(t *testing.T, r Ready, stderr string) {
	t.Helper()
	if !strings.HasPrefix(r.BaseURL, "http://127.0.0.1:") || !strings.HasSuffix(r.BaseURL, "/v1") || strings.HasPrefix(r.BaseURL, "http://127.0.0.1:0/") {
		t.Fatalf("base_url %q: want http://127.0.0.1:<the port taken>/v1", r.BaseURL)
	}
	if !strings.Contains(stderr, " at "+r.BaseURL+" ") {
		t.Errorf("the log line names another address than %s: %q", r.BaseURL, stderr)
	}
	resp, err := http.Get(r.BaseURL + "/models")
	if err != nil {
		t.Fatalf("GET %s/models: %v", r.BaseURL, err)
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s/models: %d, %v", r.BaseURL, resp.StatusCode, err)
	}
	if len(models.Data) != 1 || models.Data[0].ID != r.Model || r.Model == "" {
		t.Errorf("model %q, /v1/models lists %+v", r.Model, models.Data)
	}
}

func TestTheReadyFileNamesTheAddressTheServerListensOn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ready.json")
	var stdout, stderr cmdutil.SyncBuffer
	stop := serveSim(t, &stdout, &stderr, "--ready-file", path)
	r := await(t, path, func() string { b, _ := os.ReadFile(path); return string(b) })
	checkListens(t, r, stderr.String())
	if stdout.String() != "" {
		t.Errorf("stdout %q: a ready file leaves stdout alone", stdout.String())
	}
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
	// The file named the server while it listened, and it has stopped: the
	// folder is empty again (the temporary file was renamed, then removed).
	if left, _ := os.ReadDir(filepath.Dir(path)); len(left) != 0 {
		t.Errorf("after serve stopped, the folder holds %v", left)
	}
}

func TestReadyFileDashWritesTheAddressToStdout(t *testing.T) {
	t.Parallel()
	var stdout, stderr cmdutil.SyncBuffer
	stop := serveSim(t, &stdout, &stderr, "--ready-file", "-")
	r := await(t, "stdout", stdout.String)
	checkListens(t, r, stderr.String())
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestAReadyFileInAFolderThatIsNotThereIsBadInputBeforeServing(t *testing.T) {
	t.Parallel()
	var stdout, stderr cmdutil.SyncBuffer
	path := filepath.Join(t.TempDir(), "missing", "ready.json")
	err := serveSim(t, &stdout, &stderr, "--ready-file", path)()
	if !badinput.Is(err) || !strings.Contains(err.Error(), "--ready-file") {
		t.Errorf("error %v, want bad input naming --ready-file", err)
	}
	if strings.Contains(stderr.String(), "serving") {
		t.Errorf("stderr %q: it served before refusing the path", stderr.String())
	}
}
