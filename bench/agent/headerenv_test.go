package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
)

// A plan names the variables an agent reads its headers' values from, and
// the agent sends them to the endpoint the plan names: a hostile plan
// (anyone who reaches the agent's port) could have it send any of its
// variables, AWS_SECRET_ACCESS_KEY say, to a host of its choosing. The
// truth: an agent reads only the variables its operator allowed
// (--header-env-allow, ServerOptions.HeaderEnvAllow); a plan naming another
// is refused, naming the variable and the flag, never its value, and no
// endpoint is made with it; an allowed one is sent under its header.
func TestAnAgentReadsOnlyTheHeaderVariablesItWasAllowed(t *testing.T) {
	const awsSecret, azureKey = "aws-secret-0123456789abcdef", "azure-key-0123456789abcdef"
	getenv := func(k string) string {
		return map[string]string{"AWS_SECRET_ACCESS_KEY": awsSecret, "AZURE_KEY": azureKey}[k]
	}
	plan := func(headerEnv map[string]string) Prepare {
		return Prepare{BaseURL: "http://127.0.0.1:1/v1", Spec: bench.Spec{Name: "p", N: 2}, Shard: bench.Shard{Count: 1}, HeaderEnv: headerEnv}
	}
	for _, tc := range []struct {
		allow     []string
		headerEnv map[string]string
		refused   string // the variable the error names; "" when allowed
	}{
		{nil, map[string]string{"X-Leak": "AWS_SECRET_ACCESS_KEY"}, "AWS_SECRET_ACCESS_KEY"},
		{[]string{"AZURE_KEY"}, map[string]string{"X-Leak": "AWS_SECRET_ACCESS_KEY"}, "AWS_SECRET_ACCESS_KEY"},
		{[]string{"AZURE_KEY"}, map[string]string{"Api-Key": "AZURE_KEY", "X-Leak": "AWS_SECRET_ACCESS_KEY"}, "AWS_SECRET_ACCESS_KEY"},
		{[]string{"AZURE_KEY"}, map[string]string{"Api-Key": "AZURE_KEY"}, ""},
	} {
		s := NewServer(ServerOptions{Name: "a0", Getenv: getenv, HeaderEnvAllow: tc.allow})
		pp, err := s.options(plan(tc.headerEnv))
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "--header-env-allow") || strings.Contains(err.Error(), awsSecret) {
				t.Errorf("allow %v, plan %v: %v, want a refusal naming %s and --header-env-allow", tc.allow, tc.headerEnv, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("allow %v, plan %v: %v", tc.allow, tc.headerEnv, err)
		}
		h := http.Header{}
		pp.o.Endpoint.Apply(h)
		if h.Get("Api-Key") != azureKey || h.Get("X-Leak") != "" {
			t.Errorf("allowed plan sends %v", h)
		}
	}
}

// The truth: a plan without --header-env headers carries no header_env
// at all (what an endpoint without them gives CheckOptions' caller), so
// only a run that needs it depends on protocol 4's field.
func TestAPlanWithoutHeaderEnvCarriesNone(t *testing.T) {
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "http://127.0.0.1:1/v1"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Prepare{BaseURL: ep.BaseURL, HeaderEnv: ep.HeaderEnv()})
	if strings.Contains(string(b), "header_env") {
		t.Errorf("the plan carries %s", b)
	}
}
