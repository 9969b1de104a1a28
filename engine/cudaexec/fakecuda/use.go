package fakecuda

import (
	"errors"
	"testing"
)

// Use points internal/cuda at the fake driver, NVRTC and cuBLAS for the
// length of t (skipping t when g++ is missing) and returns a cubin cache
// directory of t's own, also os.UserCacheDir's for t: fake cubins never
// reach the user's cache, where a real GPU would read them. t must not be
// parallel (it sets the environment).
func Use(t testing.TB) (cacheDir string) {
	t.Helper()
	libs, err := Build()
	if errors.Is(err, ErrNoCompiler) {
		t.Skip("g++ is not on PATH: the fake CUDA driver cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range libs.Env() {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return dir
}
