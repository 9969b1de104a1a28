package selftest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeServe writes a shell script that stands in for `glmbench serve`: as
// serve does, it logs its address on stderr and, only when given
// --ready-file -, writes the ready line on stdout; then it serves (sleeps)
// until killed. The log names another port than the ready line, so the
// test shows which one selftest believes.
func fakeServe(t *testing.T, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in server is a shell script")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	path := filepath.Join(t.TempDir(), "glmbench")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The tests that write and start a stand-in binary run one at a time: a
// parallel test's fork between another's write and its exec holds the file
// open for writing, and the exec fails with "text file busy" (ETXTBSY).
func TestSelftestTakesTheChildsAddressFromItsReadyLineNotItsLog(t *testing.T) {
	bin := fakeServe(t, `
echo "glmbench: serving glmbench-nano at http://127.0.0.1:1/v1 (KV pool 1 tokens)" >&2
case " $* " in
*" --ready-file - "*) echo '{"base_url":"http://127.0.0.1:2/v1","model":"glmbench-nano"}' ;;
esac
exec sleep 30
`)
	srv, err := startServer(context.Background(), bin, filepath.Join(t.TempDir(), "truth.jsonl"), 4, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Killed, not interrupted: a shell started in the background may ignore SIGINT.
	defer func() { srv.cmd.Process.Kill(); srv.cmd.Wait() }()
	if srv.base != "http://127.0.0.1:2/v1" {
		t.Errorf("base %q, want the ready line's http://127.0.0.1:2/v1", srv.base)
	}
}

func TestAChildThatExitsWithoutAReadyLineIsAnError(t *testing.T) {
	bin := fakeServe(t, `
echo "glmbench: serving glmbench-nano at http://127.0.0.1:1/v1 (KV pool 1 tokens)" >&2
echo 'not json'
exit 1
`)
	_, err := startServer(context.Background(), bin, filepath.Join(t.TempDir(), "truth.jsonl"), 4, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Errorf("error %v, want: exited before serving", err)
	}
}
