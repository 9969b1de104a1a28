package bench

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// mistralRefusal is Mistral's API answering a body with stream_options
// (openai/openai-agents-python#442): pydantic's extra_forbidden, 422.
const mistralRefusal = `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]},"type":"invalid_request_error","param":null,"code":null}`

// A server that refuses stream_options, and sends usage on its last chunk
// anyway, as Mistral's API does: the default run stops at its first probe
// naming --stream-usage=false, and with it no body carries stream_options,
// the calibration and the load complete, and n comes from that usage.
func TestAServerThatRefusesStreamOptionsIsRunWithoutThem(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	withOptions := 0
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.Usage {
			mu.Lock()
			withOptions++
			mu.Unlock()
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 422, Body: mistralRefusal}
		}
		return endpointstest.Behavior{Usage: endpointstest.UsageInFinish}
	})
	defer srv.Close()
	o := testOptions(t, srv, "5e0e0a11")
	spec := []Spec{{Name: "x", N: 4, In: 120, Out: 7}}
	_, _, err := Prepare(context.Background(), o, spec)
	if err == nil || !strings.Contains(err.Error(), "HTTP 422") || !strings.Contains(err.Error(), "--stream-usage=false leaves stream_options out") || strings.Contains(err.Error(), "ignore-eos") {
		t.Fatalf("%v: want the 422 naming --stream-usage=false only", err)
	}
	if withOptions != 1 {
		t.Fatalf("%d requests with stream_options, want the one probe", withOptions)
	}
	o.Shape.NoStreamUsage = true
	plans, warns, err := Prepare(context.Background(), o, spec)
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	run := RunPhase(context.Background(), o, plans[0])
	for _, r := range run.Records {
		if !r.Completed() || r.N != 7 || r.NSource != schema.NFromUsage {
			t.Errorf("request %d: %+v, want completed with n 7 from usage", r.I, r)
		}
	}
	if withOptions != 1 {
		t.Errorf("%d requests with stream_options, want none after the first probe", withOptions)
	}
}

// OpenAI's refusal of ignore_eos names --ignore-eos=false, not the other
// switch.
func TestARefusedIgnoreEOSNamesItsSwitch(t *testing.T) {
	t.Parallel()
	if h := refusedField(400, "Unrecognized request argument supplied: ignore_eos"); h != "; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out" {
		t.Errorf("hint %q", h)
	}
	if h := refusedField(500, "ignore_eos stream_options"); h != "" {
		t.Errorf("a 5xx is no refusal of a field: %q", h)
	}
}
