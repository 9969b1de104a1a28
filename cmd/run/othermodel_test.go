package run

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// renamingProxy stands in front of p and answers every generation stream
// as model as (its chunks' "model" rewritten, line by line, flushed as they
// come); every other route passes as it is.
func renamingProxy(t *testing.T, p *endpointstest.Personality, as string) string {
	t.Helper()
	from := []byte(`"model":"` + p.Opts.Model + `"`)
	to := []byte(`"model":"` + as + `"`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			p.Config.Handler.ServeHTTP(w, r)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.URL+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadBytes('\n')
			w.Write(bytes.ReplaceAll(line, from, to))
			w.(http.Flusher).Flush()
			if err == io.EOF || err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// A stream naming another model than the one asked is kept and said: each
// of the phase's requests through a proxy that answers them all as
// openai/gpt-4o-mini is recorded with model_answered, the phase counts
// them all in other_model, and run warns with the name and count, as an
// alias or a fallback for all. A dated version of the model asked is the
// same model: no field, no count, no warning.
func TestAnswersNamedByAnotherModelAreCountedAndSaid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, as string
		other    bool
	}{
		{"another model", "openai/gpt-4o-mini", true},
		{"a dated version", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
			as := tc.as
			if as == "" {
				as = p.Opts.Model + "-2025-06-01"
			}
			dir := t.TempDir()
			in, stderr := runSaying(t, dir, "--endpoint", renamingProxy(t, p, as), "--phase", "p=6/32/4", "--no-metrics")
			ph := in.Report.Phases[0]
			named := 0
			for _, rec := range in.Records {
				if rec.ModelAnswered != "" {
					named++
					if rec.ModelAnswered != as {
						t.Errorf("request %d: model_answered %q, want %q", rec.I, rec.ModelAnswered, as)
					}
				}
			}
			warned := strings.Contains(stderr, `6 of 6 completed requests were answered as another model than "`+p.Opts.Model+`" asked ("`+as+`" ×6): the name the server serves it under`)
			want := 0
			if tc.other {
				want = 6
			}
			md := strings.Contains(cmdtest.ReadFile(t, dir, reports.ReportMD), "- p: 6 of 6 completed requests were answered as another model than asked (other_model;")
			if md != tc.other {
				t.Errorf("report.md says the other model: %v, want %v", md, tc.other)
			}
			if ph.Completed != 6 || ph.OtherModel != want || named != want || warned != tc.other {
				t.Errorf("completed %d, other_model %d, records naming it %d, warned %v; want 6, %d, %d, %v\n%s", ph.Completed, ph.OtherModel, named, warned, want, want, tc.other, stderr)
			}
		})
	}
}
