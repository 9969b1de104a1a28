package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Z.ai refuses an account in arrears (1113) or a usage limit reached
// (1308) with HTTP 429 (docs.z.ai/api-reference/api-code): no rate limit
// that a wait lifts, so the calibration stops at its first probe with the
// endpoint's message and what the code means. Its concurrency limit
// (1302) is one: the probe is asked twice more before the run gives up.
func TestAZAIAccountRefusalStopsTheCalibrationAtItsFirstProbe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code, words string
		probes      int
	}{
		{"1113", "Insufficient balance or no resource package. Please recharge.; Z.ai code 1113 (account in arrears): not a rate limit, waiting will not lift it (a GLM Coding Plan key is billed only at /api/coding/paas/v4", 1},
		{"1308", "Z.ai code 1308 (usage limit reached until its reset): not a rate limit", 1},
		{"1302", "Rate limit reached for requests", 3},
	} {
		p := endpointstest.Start(t, endpointstest.ZAI, endpointstest.Options{ZAI: endpointstest.ZAIOptions{Refuse: tc.code}})
		ep := resolve(t, p.BaseURL(), p.Opts.Model)
		o := &Options{Endpoint: ep, Shape: Shape{Model: ep.Model}, ConnectTimeout: 2e9, Nonce: NewNonce()}
		_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 2, In: 64, Out: 4}})
		if err == nil || !strings.Contains(err.Error(), "HTTP 429") || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("code %s: %v; want HTTP 429 and %q", tc.code, err, tc.words)
		}
		if n := p.Requests("POST /api/paas/v4/chat/completions"); n != tc.probes {
			t.Errorf("code %s: %d probes, want %d", tc.code, n, tc.probes)
		}
	}
}
