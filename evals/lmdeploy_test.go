package evals

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// LMDeploy started without --logprobs-mode refuses a chat request asking
// logprobs, 400 "Logprobs(True)/top_logprobs(20) requested ", and gives no
// logprobs on /v1/completions: long-ppl and MMLU by logprobs are
// unsupported there, and their failure says, after the server's sentence,
// the flag that gives them. Started with --logprobs-mode raw_logprobs, the
// same chat request is answered with its logprobs, and neither eval meets
// a refusal.
func TestLMDeploysChatLogprobsRefusalNamesLogprobsMode(t *testing.T) {
	t.Parallel()
	const hint = "(LMDeploy gives chat logprobs only when started with --logprobs-mode raw_logprobs)"
	for _, tc := range []struct {
		mode    string
		refused bool
	}{{"", true}, {"raw_logprobs", false}} {
		p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{LMDeploy: endpointstest.LMDeployOptions{LogprobsMode: tc.mode}})
		ep := &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}
		s := sender{c: endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 2}))}
		_, f := s.postOK(context.Background(), "/chat/completions",
			chatRequest(ep.Model, "The sea", map[string]any{"max_tokens": 4, "logprobs": true, "top_logprobs": chatTopLogprobs}))
		switch {
		case tc.refused && (f == nil || f.HTTPStatus != 400 || f.Detail != "HTTP 400: Logprobs(True)/top_logprobs(20) requested "+hint):
			t.Errorf("--logprobs-mode %q: chat logprobs failure %+v; want the 400 with the hint", tc.mode, f)
		case !tc.refused && f != nil:
			t.Errorf("--logprobs-mode %q: chat logprobs failure %+v; want a 200", tc.mode, f)
		}
		for _, eval := range []string{"long-ppl", "mmlu"} {
			var data Data = SampleDocs()
			if eval == "mmlu" {
				data = SampleMMLU()
			}
			res := runEval(eval, Config{Endpoint: ep, GenTokens: 16, Limit: 2}, data)
			detail := ""
			if res.Failure != nil {
				detail = res.Failure.Detail
			}
			if got := strings.Contains(detail, "requested "+hint); got != tc.refused || strings.Contains(detail, "Logprobs(") != tc.refused {
				t.Errorf("--logprobs-mode %q: %s %s, detail %q; want the refusal and its hint: %v", tc.mode, eval, res.Status, detail, tc.refused)
			}
		}
	}
}
