package selftest

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestCPUListsReadAndWriteAsTasksetDoes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]int{
		"0": {0}, "0-3": {0, 1, 2, 3}, "4,0-1,1": {0, 1, 4}, " 2 , 5-6": {2, 5, 6},
	} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0,", "1-", "2000"} {
		if got, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
	for want, cpus := range map[string][]int{"0": {0}, "0-3": {0, 1, 2, 3}, "0-1,4,6-7": {0, 1, 4, 6, 7}, "": nil} {
		if got := FormatCPUList(cpus); got != want {
			t.Errorf("%v: %q, want %q", cpus, got, want)
		}
	}
	if err := CheckCPUs([]int{1023}); err == nil {
		t.Error("CPU 1023 passed the check")
	}
}

func TestPinningReachesEveryThreadOfAProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU pinning is Linux only")
	}
	have, err := threadCPUs(0)
	if err != nil || len(have) < 2 {
		t.Skipf("needs two CPUs to tell pinned from not: %v %v", have, err)
	}
	// A child with several threads: this test binary, waiting in a test
	// that only sleeps (the Go runtime starts threads of its own).
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSleeps$")
	cmd.Env = append(os.Environ(), "SELFTEST_HELPER_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Pinned once it runs several threads: each must be reached.
	var tasks []os.DirEntry
	for deadline := time.Now().Add(10 * time.Second); len(tasks) < 4 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tasks, err = os.ReadDir("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task")
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(tasks) < 4 {
		t.Fatalf("the helper has %d threads, want 4 or more", len(tasks))
	}
	want := have[len(have)-1:]
	if err := pinProcess(cmd.Process.Pid, want); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if got, err := threadCPUs(tid); err != nil || !slices.Equal(got, want) {
			t.Errorf("thread %d runs on %v (%v), want %v", tid, got, err, want)
		}
	}
}

func TestHelperSleeps(t *testing.T) {
	if os.Getenv("SELFTEST_HELPER_SLEEP") == "" {
		t.Skip("a helper process for TestPinningReachesEveryThreadOfAProcess")
	}
	for range 4 { // a thread each
		go func() {
			runtime.LockOSThread()
			time.Sleep(time.Minute)
		}()
	}
	time.Sleep(time.Minute)
}
