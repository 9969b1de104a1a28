package root

import (
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// SGLang's /get_server_info repeats its server args in each scheduler's
// internal_states entry, api_key and an admin_api_key glmbench never sent
// in clear (srt/managers/scheduler_components/internal_state.py): the
// report keeps those entries and neither key, at the top or nested.
func TestSGLangsInternalStatesKeepNoKeyInTheReport(t *testing.T) {
	t.Parallel()
	const admin = "admin-never-sent-4242424242"
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{APIKey: secretKey, AdminAPIKey: admin})
	dir := t.TempDir()
	code, stdout, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=2/64/8", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep, _, _ := readReport(t, dir)
	states, _ := rep.Endpoint.ServerInfo["internal_states"].([]any)
	if len(states) != 1 {
		t.Fatalf("server_info internal_states %v: the test would show nothing", rep.Endpoint.ServerInfo["internal_states"])
	}
	if rank, _ := states[0].(map[string]any); rank["memory_usage"] == nil {
		t.Fatalf("internal_states[0] %v lost its memory_usage", rank)
	}
	wantNoSecret(t, outputs(t, dir, stdout, stderr), secretKey, admin)
}
