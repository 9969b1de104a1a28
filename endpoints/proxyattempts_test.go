package endpoints_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

func TestProxyAttemptsReadsCountsAndIgnoresWhatIsNoCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		headers            map[string]string
		retries, fallbacks int
	}{
		{"no proxy header", nil, 0, 0},
		{"LiteLLM's two counts", map[string]string{"x-litellm-attempted-retries": "2", "x-litellm-attempted-fallbacks": "1"}, 2, 1},
		{"LiteLLM's zeros", map[string]string{"x-litellm-attempted-retries": "0", "x-litellm-attempted-fallbacks": "0"}, 0, 0},
		{"Portkey's retry count", map[string]string{"x-portkey-retry-attempt-count": "3"}, 3, 0},
		{"a LiteLLM behind a Portkey: both layers' retries", map[string]string{"x-litellm-attempted-retries": "1", "x-portkey-retry-attempt-count": "4"}, 5, 0},
		{"Envoy's original attempt alone", map[string]string{"x-envoy-attempt-count": "1"}, 0, 0},
		{"Envoy's third attempt: two retries", map[string]string{"x-envoy-attempt-count": "3"}, 2, 0},
		{"Envoy's zero is no count of its", map[string]string{"x-envoy-attempt-count": "0"}, 0, 0},
		{"Cloudflare's primary step", map[string]string{"cf-aig-step": "0"}, 0, 0},
		{"Cloudflare's second fallback", map[string]string{"cf-aig-step": "2"}, 0, 2},
		{"spaces around a count", map[string]string{"x-litellm-attempted-retries": " 2 "}, 2, 0},
		{"a word, not a number", map[string]string{"x-litellm-attempted-retries": "many", "x-litellm-attempted-fallbacks": "none"}, 0, 0},
		{"a fraction", map[string]string{"x-litellm-attempted-retries": "1.5"}, 0, 0},
		{"a negative count", map[string]string{"x-litellm-attempted-retries": "-3"}, 0, 0},
		{"the largest count believed", map[string]string{"x-litellm-attempted-retries": fmt.Sprint(endpoints.MaxProxyAttempts)}, endpoints.MaxProxyAttempts, 0},
		{"one past it", map[string]string{"x-litellm-attempted-retries": fmt.Sprint(endpoints.MaxProxyAttempts + 1)}, 0, 0},
		{"past int64", map[string]string{"x-litellm-attempted-retries": "99999999999999999999999", "x-litellm-attempted-fallbacks": "1e9"}, 0, 0},
	} {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		if r, f := endpoints.ProxyAttempts(h); r != tc.retries || f != tc.fallbacks {
			t.Errorf("%s: retries %d, fallbacks %d; want %d, %d", tc.name, r, f, tc.retries, tc.fallbacks)
		}
	}
}

// streamOnce sends one streamed chat request of model to baseURL.
func streamOnce(t *testing.T, c *endpoints.Client, model string) endpoints.StreamResult {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`, model))
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{TTFT: 5 * time.Second}, nil, &res)
	return res
}

func TestAStreamKeepsTheRetriesALiteLLMProxySaysItMade(t *testing.T) {
	t.Parallel()
	// Every third request (the 1st, 4th) is retried twice inside the proxy.
	p := endpointstest.Start(t, endpointstest.Gateway, endpointstest.Options{LiteLLM: endpointstest.LiteLLMOptions{
		On: true, Retries: 2, RetryEvery: 3, RetryDelay: time.Millisecond}})
	c := modelClient(t, p.BaseURL(), "")
	const n = 6
	sent := 0
	for i := range n {
		res := streamOnce(t, c, p.Opts.Model)
		want := 0
		if i%3 == 0 {
			want = 2
		}
		if res.Class != "" || res.ProxyRetries != want || res.ProxyFallbacks != 0 {
			t.Errorf("request %d: class %q, proxy retries %d, fallbacks %d; want retries %d, no fallback", i+1, res.Class, res.ProxyRetries, res.ProxyFallbacks, want)
		}
		sent += res.ProxyRetries + 1
	}
	// The proxy's own count of backend attempts is each request's one plus
	// the retries its answer said.
	if _, attempts := p.LiteLLMCounts(); attempts != sent {
		t.Errorf("the proxy made %d backend attempts; the answers account for %d", attempts, sent)
	}
}

func TestAStreamWithAHostileRetryHeaderIsServedWithoutACount(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("x-litellm-attempted-retries", "'; DROP TABLE")
		w.Header().Set("x-litellm-attempted-fallbacks", "184467440737095516160")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	res := streamOnce(t, modelClient(t, srv.URL+"/v1", ""), "m")
	if res.Class != "" || !res.Done || res.ProxyRetries != 0 || res.ProxyFallbacks != 0 {
		t.Errorf("class %q, done %v, proxy retries %d, fallbacks %d; want a completed stream with no count", res.Class, res.Done, res.ProxyRetries, res.ProxyFallbacks)
	}
}

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
