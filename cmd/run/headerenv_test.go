package run

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// azureKey is the api-key header's value in these tests.
const azureKey = "azure-secret-0123456789abcdef"

// apiKeyGate is vLLM's fake behind a gateway that wants Azure's api-key
// header: 401 without it. It counts the requests that lacked it.
func apiKeyGate(t *testing.T) (base string, lacking *atomic.Int64) {
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	target, _ := url.Parse(p.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	lacking = new(atomic.Int64)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Api-Key") != azureKey {
			lacking.Add(1)
			http.Error(w, `{"error": {"code": "401", "message": "Access denied due to invalid subscription key."}}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	return gw.URL + "/v1", lacking
}

// agentsWith starts agents whose environments are envs, each allowed to
// read allow for a header's value (--header-env-allow) and wrapped so
// that what reaches it is kept in seen.
func agentsWith(t *testing.T, seen *bytes.Buffer, allow []string, envs ...map[string]string) []string {
	var addrs []string
	for k, env := range envs {
		h := agent.NewServer(agent.ServerOptions{Name: "a" + string(rune('0'+k)), Getenv: func(v string) string { return env[v] }, HeaderEnvAllow: allow}).Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			seen.Write(b)
			r.Body = io.NopCloser(bytes.NewReader(b))
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return addrs
}

// --header-env api-key=AZURE_KEY through two agents: the plan carries the
// variable's name, each agent reads the value from its own environment.
// The truth: every request the gateway saw carried the key (none lacked
// it), all 6 complete, no byte sent to an agent holds the key, and the
// report has the header's name only. An agent without the variable, or not
// allowed to read it (--header-env-allow), refuses the plan naming it, and
// a --header given with its value is refused before any request, pointing
// at --header-env.
func TestHeaderEnvTravelsToAgentsAsAVariableName(t *testing.T) {
	t.Parallel()
	base, lacking := apiKeyGate(t)
	env := map[string]string{"AZURE_KEY": azureKey}
	var seen bytes.Buffer
	allow := []string{"AZURE_KEY"}
	addrs := agentsWith(t, &seen, allow, env, env)
	// viaAgents runs the phase through agents with --header-env, its
	// report in dir.
	viaAgents := func(agents []string, dir string) (*cmdutil.SyncBuffer, error) {
		f, _, errOut := cmdutil.TestFactory(context.Background(), env)
		err := cmdtest.Execute(f, NewCmdRun, "--endpoint", base, "--phase", "p=6/32/4", "--no-metrics", "--header-env", "api-key=AZURE_KEY",
			"--agents", strings.Join(agents, ","), "--out", dir)
		return errOut, err
	}
	dir := t.TempDir()
	errOut, err := viaAgents(addrs, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	in, err := reports.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lacking.Load() != 0 || len(in.Records) != 6 || in.Report.Phases[0].Completed != 6 {
		t.Errorf("%d requests lacked the key; %d records, %d completed: want 0, 6, 6", lacking.Load(), len(in.Records), in.Report.Phases[0].Completed)
	}
	if strings.Contains(seen.String(), azureKey) || !strings.Contains(seen.String(), `"AZURE_KEY"`) {
		t.Errorf("what the agents were sent holds the key, or not the variable's name")
	}
	written := cmdtest.ReadFile(t, dir, reports.ReportJSON) + cmdtest.ReadFile(t, dir, reports.ReportMD) + errOut.String()
	if strings.Contains(written, azureKey) || !strings.Contains(cmdtest.ReadFile(t, dir, reports.ReportJSON), "Api-Key") {
		t.Errorf("the report or stderr holds the key, or does not name the header")
	}

	// An agent lost in its prepare leaves its requests not sent, the phase
	// degraded, as any lost agent does.
	bare := agentsWith(t, &seen, allow, env, map[string]string{})
	errOut, err = viaAgents(bare, t.TempDir())
	if err != nil || !strings.Contains(errOut.String(), "400 Bad Request: environment variable AZURE_KEY (the value of header Api-Key, --header-env) is empty or unset") {
		t.Errorf("an agent without the variable: %v\n%s\nwant the phase degraded, the variable named", err, errOut.String())
	}

	// An agent whose operator did not allow the variable: the same.
	barred := agentsWith(t, &seen, allow, env)
	barred = append(barred, agentsWith(t, &seen, nil, env)...)
	errOut, err = viaAgents(barred, t.TempDir())
	if err != nil || !strings.Contains(errOut.String(), `"AZURE_KEY", which this agent was not allowed to read: start it with --header-env-allow AZURE_KEY`) || strings.Contains(errOut.String(), azureKey) {
		t.Errorf("an agent not allowed the variable: %v\n%s\nwant the phase degraded, the flag named", err, errOut.String())
	}

	code, stderr := execute(t, context.Background(), "--endpoint", base, "--phase", "p=6/32/4", "--no-metrics", "--header", "api-key="+azureKey,
		"--agents", strings.Join(addrs, ","), "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "give each as --header-env NAME=VAR") || strings.Contains(stderr, azureKey) {
		t.Errorf("exit %d, stderr %q: want exit 2 pointing at --header-env", code, stderr)
	}
}
