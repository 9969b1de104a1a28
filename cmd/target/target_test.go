package target

import "testing"

func TestPathSafeLabels(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"zai-org/GLM-5": "zai-org-GLM-5", "../..": "run", "a b:c": "a-b-c", "": "run"} {
		if got := PathSafe(in); got != want {
			t.Errorf("PathSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
