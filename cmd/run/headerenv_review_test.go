package run

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

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
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	target, _ := url.Parse(p.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var chats atomic.Int64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") || chats.Add(1) <= 2 {
			proxy.ServeHTTP(w, r) // the calibration's two probes pass
			return
		}
		got := r.Header.Get("X-Api-Key")
		quoted, _ := json.Marshal(got)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		msg, _ := json.Marshal("invalid key '" + got + "' (" + strings.ToUpper(got) + ", " + string(quoted) + ", word " + word + ")")
		w.Write([]byte(`{"error":{"message":` + string(msg) + `}}`))
	}))
	t.Cleanup(gw.Close)
	dir := t.TempDir()
	f, _, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"GW_KEY": value})
	err := cmdtest.Execute(f, NewCmdRun, "--endpoint", gw.URL+"/v1", "--phase", "p=3/16/4", "--no-metrics", "--header-env", "X-Api-Key=GW_KEY", "--out", dir)
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
