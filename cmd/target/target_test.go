package target

import (
	"testing"

	"github.com/glmbench/glmbench/bench"
)

func TestPathSafeLabels(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"zai-org/GLM-5": "zai-org-GLM-5", "../..": "run", "a b:c": "a-b-c", "": "run"} {
		if got := PathSafe(in); got != want {
			t.Errorf("PathSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// The fixed phases' load, said before any request: Σ N = 1+512+16+929,
// Σ N·IN and Σ N·OUT over their shapes; one request (a sweep's shape) says
// nothing.
func TestLoadSizeOfTheFixedPhases(t *testing.T) {
	want := "then the load: 1,458 requests, 7,872,768 prompt tokens and at most 1,086,720 output tokens"
	if got := loadSize(bench.Builtin); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := loadSize([]bench.Spec{{Name: "sweep", N: 1, In: 256, Out: 128}}); got != "" {
		t.Errorf("one request: %q, want nothing", got)
	}
}
