package evals

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// An eval's failure at Z.ai's general base says what run's calibration
// says of a 429 1113 there: a GLM Coding Plan key is billed only at the
// Coding Plan's base. The truth: the hint at /api/paas/v4, none at
// /api/coding/paas/v4, the server's sentence first in both.
func TestAZAIBalanceRefusalOfAnEvalNamesTheCodingPlansBase(t *testing.T) {
	t.Parallel()
	const hint = "(a GLM Coding Plan key is billed only at /api/coding/paas/v4: on /api/paas/v4 it gets 1113)"
	for _, coding := range []bool{false, true} {
		p := endpointstest.Start(t, endpointstest.ZAI, endpointstest.Options{ZAI: endpointstest.ZAIOptions{Refuse: "1113", Coding: coding}})
		ep := &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}
		s := sender{c: endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 1}))}
		_, f := s.postOK(context.Background(), "/chat/completions", chatRequest(ep.Model, "The sea", map[string]any{"max_tokens": 4}))
		if f == nil || f.HTTPStatus != 429 || !strings.HasPrefix(f.Detail, "HTTP 429: Insufficient balance") || strings.HasSuffix(f.Detail, hint) == coding {
			t.Errorf("coding plan base %v: failure %+v; want the 429 1113, with the hint only at the general base", coding, f)
		}
	}
}
