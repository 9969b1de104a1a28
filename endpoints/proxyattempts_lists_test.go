package endpoints_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// A header may come more than once (the backend's own, passed through, and
// the proxy's), or as one comma-joined list (RFC 9110 §5.3, as a layer that
// combines them sends it): every element is a count of its layer, so a
// leading "0" neither hides the proxy's fallback after it nor makes the
// list no count at all.
func TestProxyAttemptsCountsEveryValueOfAHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		headers            [][2]string
		retries, fallbacks int
	}{
		{"a 0 before the proxy's fallback", [][2]string{{"x-litellm-attempted-fallbacks", "0"}, {"x-litellm-attempted-fallbacks", "1"}}, 0, 1},
		{"a word before the proxy's fallback", [][2]string{{"cf-aig-step", "primary"}, {"cf-aig-step", "2"}}, 0, 2},
		{"two layers' retries as two lines", [][2]string{{"x-litellm-attempted-retries", "1"}, {"x-litellm-attempted-retries", "2"}}, 3, 0},
		{"two layers' retries as one list", [][2]string{{"x-litellm-attempted-retries", "0, 2"}}, 2, 0},
		{"two Envoys, the second retried once", [][2]string{{"x-envoy-attempt-count", "1"}, {"x-envoy-attempt-count", "2"}}, 1, 0},
		{"a list with a word in it", [][2]string{{"x-litellm-attempted-fallbacks", "x, 1"}}, 0, 1},
		{"many values past the largest count", manyValues("x-litellm-attempted-retries", endpoints.MaxProxyAttempts, 3), endpoints.MaxProxyAttempts, 0},
	} {
		h := http.Header{}
		for _, kv := range tc.headers {
			h.Add(kv[0], kv[1])
		}
		if r, f := endpoints.ProxyAttempts(h); r != tc.retries || f != tc.fallbacks {
			t.Errorf("%s: retries %d, fallbacks %d; want %d, %d", tc.name, r, f, tc.retries, tc.fallbacks)
		}
	}
}

// manyValues is n lines of name, each the count v.
func manyValues(name string, n, v int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{name, fmt.Sprint(v)}
	}
	return out
}
