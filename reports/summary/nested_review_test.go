package summary_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/summary"
)

// Google's errors are an array of one error object ([{"error": {...}}]);
// an array nested in an array is no such body. A server's body of arrays
// nested thousands deep (20 KB: go-openai reads a /models answer whole)
// is read once, not again at each level: the allocations do not grow
// with the depth (before: some per level, a parse of the rest each time).
func TestADeepNestedArrayBodyIsReadOnce(t *testing.T) {
	nested := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + `{"error":{"message":"deep"}}` + strings.Repeat("]", n))
	}
	if got, want := summary.ErrorMessage(nested(1)), "deep"; got != want {
		t.Errorf("ErrorMessage of Google's shape = %q, want %q", got, want)
	}
	if got, want := summary.ErrorMessage(nested(2)), string(nested(2)); got != want {
		t.Errorf("ErrorMessage of an array in an array = %q, want its text", got)
	}
	shallow := testing.AllocsPerRun(3, func() { summary.ErrorMessage(nested(10)) })
	deep := testing.AllocsPerRun(3, func() { summary.ErrorMessage(nested(2000)) })
	if deep > 2*shallow+20 {
		t.Errorf("ErrorMessage allocates %.0f times at depth 2,000, %.0f at depth 10: it reads each level again", deep, shallow)
	}
}
