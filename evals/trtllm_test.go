package evals

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// trtllm-serve refuses more top logprobs than its MAX_TOP_LOGPROBS in
// pydantic's words, "... must be less than or equal to N", inside the
// repr of its error list (check_logprobs_limit): MMLU reads the cap from
// that phrase as from vLLM's "max allowed" and asks again with it (a cap
// of 4 below its 5), and is scored by top_logprobs on /v1/completions,
// saying the cap in its detail; the phrase is read in either build's
// error shape.
func TestMMLUAsksTheTopLogprobsTRTLLMStatesAsLessThanOrEqualTo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{TRTLLM: endpointstest.TRTLLMOptions{MaxTopLogprobs: 4}})
	res := runEval("mmlu", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, Concurrency: 4, Limit: 2}, SampleMMLU())
	if res.Status != StatusOK || res.Method != MethodTopLogprobs || res.Failure == nil ||
		!strings.Contains(res.Failure.Detail, "asked the top 4 logprobs, the server's stated maximum, having been refused 5") {
		t.Fatalf("%+v %+v; want ok by %s asking the top 4", res, res.Failure, MethodTopLogprobs)
	}
	for _, tc := range []struct{ path, body string }{
		{"/completions", `{"error": "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, logprobs must be less than or equal to 5', 'input': {'logprobs': 20}}]"}`},
		{"/chat/completions", `{"object": "error", "message": "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, top_logprobs must be less than or equal to 8', 'input': {'logprobs': True, 'top_logprobs': 20}}]", "type": "BadRequestError", "param": null, "code": 400}`},
	} {
		field := topLogprobsField[tc.path]
		if _, n := topLogprobsCap(tc.path, map[string]any{field: 20}, &endpoints.Response{Status: 400, Body: []byte(tc.body)}); n == 0 || !strings.Contains(tc.body, "equal to "+itoa(n)) {
			t.Errorf("%s: cap %d from %s", tc.path, n, tc.body)
		}
	}
}
