package reports_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// TestEchoedSecretsReachNoOutput runs a phase against a server that echoes
// the Authorization value and a --header value back: in a 500 body (the key
// straddling byte 200, the header upper-cased) and in an error event inside
// a 200 stream (JSON-escaped). Its other answers are streams with unsound
// usage and malformed data lines. None of the secrets, nor any 8 characters
// of one, may reach a record, the phase's error_kinds, report.json,
// report.md or requests.jsonl; the unusable data is counted and said.
func TestEchoedSecretsReachNoOutput(t *testing.T) {
	const key = "sk-e2e/0123456789abcdefghijklmnop"
	const team = "team-Secret-ABCDEFGH-987654"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, hv := r.Header.Get("Authorization"), r.Header.Get("X-Team")
		switch n.Add(1) % 3 {
		case 1:
			pad := `{"error":{"message":"`
			pad += strings.Repeat("p", 190-len(pad)-len("Bearer "))
			w.WriteHeader(500)
			fmt.Fprintf(w, `%s%s rejected for %s","type":"server_error"}}%s`, pad, auth, strings.ToUpper(hv), strings.Repeat(" ", 500))
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			esc := strings.ReplaceAll(auth, "/", `\/`)
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"%s for %s\",\"code\":401}}\n\n", esc, hv)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json\n\n")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":-5}}\n\ndata: [DONE]\n\n")
		}
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m", Headers: []string{"X-Team=" + team}},
		func(k string) string { return map[string]string{"OPENAI_API_KEY": key}[k] })
	if err != nil {
		t.Fatal(err)
	}
	opts := &bench.Options{
		Endpoint: ep, Shape: bench.Shape{Model: "m"}, ConnectTimeout: 2 * time.Second, Nonce: "0a1b2c3d",
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second},
		// One at a time, so the server's answers alternate by request.
		MaxConcurrency: 1,
	}
	run := bench.RunPhase(context.Background(), opts, bench.Plan{
		Spec: bench.Spec{Name: "p", N: 6, In: 8, Out: 16}, Cal: bench.Calibration{Target: 8, Chars: 32, PromptTokens: -1},
	})
	ph := run.Result
	if ph.Errors != 4 || ph.ByClass[schema.HTTP5xx] != 2 || ph.ByClass[schema.StreamError] != 2 || ph.Completed != 2 {
		t.Fatalf("completed %d, errors %v", ph.Completed, ph.ByClass)
	}
	if ph.MalformedEvents != 2 || ph.MalformedRequests != 2 || ph.BadUsage != 2 {
		t.Fatalf("malformed %d in %d, bad usage %d; want 2, 2, 2", ph.MalformedEvents, ph.MalformedRequests, ph.BadUsage)
	}
	for _, rec := range run.Records {
		if rec.Completed() && (rec.N != 2 || rec.NSource != schema.NFromEvents || !strings.Contains(rec.BadUsage, "-5")) {
			t.Fatalf("record %d: n %d from %s, bad_usage %q; want 2 from events", rec.I, rec.N, rec.NSource, rec.BadUsage)
		}
	}
	if ph.OutTput <= 0 {
		t.Fatalf("out_tput %v from -5 completion tokens", ph.OutTput)
	}
	rep := &schema.Report{Schema: schema.ReportSchema, Label: "hostile", Nonce: opts.Nonce, Phases: []schema.PhaseResult{ph},
		Endpoint: schema.Endpoint{BaseURL: ep.BaseURL, Model: "m", Headers: ep.HeaderNames()}}
	var js, md, recs bytes.Buffer
	if err := reports.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteRecords(&recs, run.Records); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for k := range ph.ErrorKinds {
		kinds = append(kinds, k)
	}
	for name, out := range map[string]string{
		"error_kinds": strings.Join(kinds, "\n"), "report.json": js.String(), "report.md": md.String(), "requests.jsonl": recs.String(),
	} {
		low := strings.ToLower(out)
		for _, sec := range []string{key, team} {
			sec = strings.ToLower(sec)
			for i := 0; i+8 <= len(sec); i++ {
				if strings.Contains(low, sec[i:i+8]) {
					t.Errorf("%s holds %q of a secret:\n%s", name, sec[i:i+8], out)
					break
				}
			}
		}
	}
	if !strings.Contains(md.String(), "2 malformed data lines") || !strings.Contains(md.String(), "2 requests with usage that is not a sound count") {
		t.Errorf("report.md does not say what could not be used:\n%s", md.String())
	}
}
