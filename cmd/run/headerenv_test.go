package run

import (
	"bytes"
	"context"
	"encoding/json"
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

// vllmBehind is vLLM's fake behind a gateway whose gate answers every
// request, passing to server what it lets through. It returns the
// gateway's API base.
func vllmBehind(t *testing.T, gate func(w http.ResponseWriter, r *http.Request, server http.Handler)) string {
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	target, _ := url.Parse(p.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gate(w, r, proxy) }))
	t.Cleanup(gw.Close)
	return gw.URL + "/v1"
}

// apiKeyGate is vLLM's fake behind a gateway that wants Azure's api-key
// header: 401 without it. It counts the requests that lacked it.
func apiKeyGate(t *testing.T) (base string, lacking *atomic.Int64) {
	lacking = new(atomic.Int64)
	base = vllmBehind(t, func(w http.ResponseWriter, r *http.Request, server http.Handler) {
		if r.Header.Get("Api-Key") != azureKey {
			lacking.Add(1)
			http.Error(w, `{"error": {"code": "401", "message": "Access denied due to invalid subscription key."}}`, http.StatusUnauthorized)
			return
		}
		server.ServeHTTP(w, r)
	})
	return base, lacking
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
	in := cmdtest.Load(t, dir)
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

// A gateway that quotes the header it refused, as some do ("invalid
// subscription key 'KEY'"): the value read from the environment holds
// spaces and quotes, and the gateway writes it back raw, JSON-escaped and
// upper-cased, on every request of the phase (the calibration's two probes pass).
// The truth: every request fails (none reaches the engine),
// and neither the value nor its long word is in stderr, report.json,
// report.md or requests.jsonl, in any of those forms.
func TestAHeaderEnvValueAGatewayEchoesIsInNoOutput(t *testing.T) {
	t.Parallel()
	const value, word = `gw-key "quoted" 0123456789abcdef`, "0123456789abcdef"
	var chats atomic.Int64
	base := vllmBehind(t, func(w http.ResponseWriter, r *http.Request, server http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") || chats.Add(1) <= 2 {
			server.ServeHTTP(w, r) // the calibration's two probes pass
			return
		}
		got := r.Header.Get("X-Api-Key")
		quoted, _ := json.Marshal(got)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		msg, _ := json.Marshal("invalid key '" + got + "' (" + strings.ToUpper(got) + ", " + string(quoted) + ", word " + word + ")")
		w.Write([]byte(`{"error":{"message":` + string(msg) + `}}`))
	})
	dir := t.TempDir()
	f, _, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"GW_KEY": value})
	err := cmdtest.Execute(f, NewCmdRun, "--endpoint", base, "--phase", "p=3/16/4", "--no-metrics", "--header-env", "X-Api-Key=GW_KEY", "--out", dir)
	in, lerr := reports.Load(dir)
	if lerr != nil {
		t.Fatalf("%v; %v\n%s", lerr, err, errOut.String())
	}
	if in.Report.Phases[0].Completed != 0 || len(in.Records) != 3 {
		t.Fatalf("%d completed of %d records: want 0 of 3 (the gateway refuses every one)", in.Report.Phases[0].Completed, len(in.Records))
	}
	written := strings.ToLower(errOut.String() + cmdtest.ReadFile(t, dir, reports.ReportJSON) + cmdtest.ReadFile(t, dir, reports.ReportMD) + cmdtest.ReadFile(t, dir, reports.RecordsJSONL))
	if !strings.Contains(written, "invalid key") {
		t.Fatalf("the gateway's message is nowhere: the test checks nothing\n%s", written)
	}
	for _, s := range []string{word, `"quoted" 0123`, `\"quoted\"`} {
		if strings.Contains(written, strings.ToLower(s)) {
			t.Errorf("the output holds %q", s)
		}
	}
}
