package scrape

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

func TestDefaultURLIsTheOriginsMetrics(t *testing.T) {
	cases := []struct{ base, want string }{
		{"http://host:30000/v1", "http://host:30000/metrics"},
		{"https://api.example.com/v1/", "https://api.example.com/metrics"},
		{"http://host:8000", "http://host:8000/metrics"},
		{"http://10.0.0.5:8080/proxy/v1", "http://10.0.0.5:8080/metrics"},
		{"http://[::1]:8080/v1", "http://[::1]:8080/metrics"},
		{"http://user:pass@host/v1", "http://user:pass@host/metrics"},
		{"http://host/v1?x=1#frag", "http://host/metrics"},
		{" http://host:30000/v1 ", "http://host:30000/metrics"},
		{"", ""},
		{"host:30000/v1", ""},
		{"ftp://host/v1", ""},
		{"http:///v1", ""},
		{"http://bad host/v1", ""},
	}
	for _, tc := range cases {
		if got := DefaultURL(tc.base); got != tc.want {
			t.Errorf("DefaultURL(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}

// serveFile serves a testdata file at /metrics with a Content-Type.
func serveFile(t *testing.T, file, contentType string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestScrapeReadsEachServersSampleOverHTTP(t *testing.T) {
	clock := time.Unix(1764590400, 250_000_000)
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveFile(t, tc.file, tc.contentType)
			s := New(DefaultURL(srv.URL+"/v1"), srv.Client(), nil)
			s.Now = func() time.Time { return clock }
			got := s.Scrape(context.Background())
			if got.Error != "" || got.Source != tc.source {
				t.Fatalf("source %q error %q", got.Source, got.Error)
			}
			if got.Unix != 1764590400.25 {
				t.Errorf("unix %v, want the clock's 1764590400.25", got.Unix)
			}
			if got.T != 0 || got.Phase != "" || got.When != "" || got.Point != 0 {
				t.Errorf("filled the caller's fields: %+v", got)
			}
			checkValues(t, got.Values, tc.values)
			checkHists(t, got.Hists, tc.hists)
		})
	}
}

func TestScrapeSendsTheHeadersAndAsksForText(t *testing.T) {
	var auth, accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, accept = r.Header.Get("Authorization"), r.Header.Get("Accept")
		w.Header().Set("Content-Type", ctText)
		w.Write([]byte("sglang:num_running_reqs 1\n"))
	}))
	defer srv.Close()
	h := http.Header{}
	h.Set("Authorization", "Bearer sk-secret-123456")
	if src, err := New(srv.URL+"/metrics", srv.Client(), h).Probe(context.Background()); err != nil || src != SGLang {
		t.Fatalf("probe %q %v", src, err)
	}
	if auth != "Bearer sk-secret-123456" {
		t.Errorf("Authorization %q", auth)
	}
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") || strings.Contains(accept, "openmetrics") {
		t.Errorf("Accept %q: want the text format and no OpenMetrics", accept)
	}
}

func TestScrapeFailuresAreSamplesWithAnError(t *testing.T) {
	const secret = "sk-Secret-Token-998877"
	huge := strings.Repeat("sglang:num_running_reqs 1\n", BodyLimit/26+2)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    string
	}{
		{"a 500 says its status", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom "+secret, http.StatusInternalServerError)
		}, 0, "HTTP 500"},
		{"a 404 (no --metrics) says its status", func(w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		}, 0, "HTTP 404"},
		{"a server that never answers times out", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, 50 * time.Millisecond, "timed out"},
		{"an HTML page is not an exposition", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>login</html>"))
		}, 0, "Content-Type"},
		{"a body over the limit is not parsed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			w.Write([]byte(huge))
		}, 0, "over 16 MiB"},
		{"a parse error that quotes the secret does not repeat it", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			// expfmt quotes the bad value: "expected float as value, got …".
			w.Write([]byte("sglang:num_running_reqs " + strings.ToUpper(secret) + "\n"))
		}, 0, "got \"***\""},
		{"a parse error quoting a megabyte line is cut, the secret at its end redacted", func(w http.ResponseWriter, r *http.Request) {
			// Another app's JSON served as text/plain on one line: expfmt
			// quotes the whole token after the name in its error.
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte(`sglang:num_running_reqs "data":"` + strings.Repeat("é", 1<<19) + secret + "\"}\n"))
		}, 0, "expected float as value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			h := http.Header{}
			h.Set("Authorization", "Bearer "+secret)
			s := New(srv.URL+"/metrics", srv.Client(), h)
			s.Timeout = tc.timeout
			got := s.Scrape(context.Background())
			if !strings.Contains(got.Error, tc.want) {
				t.Errorf("error %q, want it to say %q", got.Error, tc.want)
			}
			if strings.Contains(strings.ToLower(got.Error), strings.ToLower(secret)) {
				t.Errorf("error %q shows the header's secret", got.Error)
			}
			if len(got.Error) > ErrorLimit+len("…") || !utf8.ValidString(got.Error) || strings.ContainsAny(got.Error, "\n\r") {
				t.Errorf("error of %d bytes, valid UTF-8 %v: want one line of at most %d bytes", len(got.Error), utf8.ValidString(got.Error), ErrorLimit)
			}
			if got.Values != nil || got.Hists != nil || got.Unix == 0 {
				t.Errorf("sample %+v: want no values and the time", got)
			}
			if _, err := s.Probe(context.Background()); err == nil {
				t.Error("probe: no error")
			}
		})
	}
}

func TestScrapeOfAClosedPortNamesNoURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	got := New(strings.Replace(u, "http://", "http://admin:hunter2secret@", 1)+"/metrics", nil, nil).Scrape(context.Background())
	if got.Error == "" || strings.Contains(got.Error, "hunter2secret") || strings.Contains(got.Error, "admin") {
		t.Errorf("error %q", got.Error)
	}
}

func TestACanceledScrapeSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if got := New(srv.URL, srv.Client(), nil).Scrape(ctx); got.Error != "canceled" {
		t.Errorf("error %q, want canceled", got.Error)
	}
}

func TestRedactHookRunsAfterTheHeaderRedaction(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Write([]byte("bad line with hidden-word\n"))
	}))
	defer srv.Close()
	s := New(srv.URL, srv.Client(), nil)
	s.Redact = func(m string) string { return strings.ReplaceAll(m, "parse", "PARSE") }
	if got := s.Scrape(context.Background()); !strings.HasPrefix(got.Error, "PARSE") {
		t.Errorf("error %q: the hook did not run", got.Error)
	}
}

func TestTheTableNamesOnlyCommonNamesAndKnownServers(t *testing.T) {
	common := map[string]bool{}
	for _, n := range []string{schema.SrvRequests, schema.SrvPromptTokens, schema.SrvGenerationTokens, schema.SrvPreemptions,
		schema.SrvPrefixQueried, schema.SrvPrefixHit, schema.SrvSpecSteps, schema.SrvSpecDrafted, schema.SrvSpecAccepted, schema.SrvRetries,
		schema.SrvRunning, schema.SrvQueued, schema.SrvKVUsage, schema.SrvCacheHitRate, schema.SrvAcceptLength,
		schema.SrvTTFT, schema.SrvITL, schema.SrvE2E} {
		common[n] = true
	}
	hist := map[string]bool{schema.SrvTTFT: true, schema.SrvITL: true, schema.SrvE2E: true}
	prefix := map[string]string{}
	for _, s := range Servers {
		prefix[s.Name] = s.Prefix
	}
	seen := map[string]bool{}
	for _, row := range Table {
		p, ok := prefix[row.Server]
		switch {
		case !ok:
			t.Errorf("%s: unknown server %q", row.Name, row.Server)
		case !strings.HasPrefix(row.Name, p) || row.Plus != "" && !strings.HasPrefix(row.Plus, p) || row.Per != "" && !strings.HasPrefix(row.Per, p):
			t.Errorf("%s: not under %s's prefix %q", row.Name, row.Server, p)
		case !common[row.Common]:
			t.Errorf("%s: %q is not a common name", row.Name, row.Common)
		case hist[row.Common] != (row.Kind == Histogram):
			t.Errorf("%s: kind %s for %s", row.Name, row.Kind, row.Common)
		case row.Kind == Counter && !strings.HasSuffix(row.Name, "_total") && row.Server != TGI:
			t.Errorf("%s: a counter's name without _total", row.Name)
		case row.Doc == "":
			t.Errorf("%s: no source", row.Name)
		}
		key := row.Server + " " + row.Name + " " + row.Common
		if seen[key] {
			t.Errorf("%s twice", key)
		}
		seen[key] = true
	}
}

func TestAnErrorQuotingAHeaderValueInAnyCaseRedactsIt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Write([]byte("sglang:num_running_reqs K9-PLAIN-KEY-77\n"))
	}))
	defer srv.Close()
	h := http.Header{}
	h.Set("X-Api-Key", "k9-plain-key-77")
	got := New(srv.URL, srv.Client(), h).Scrape(context.Background())
	if !strings.Contains(got.Error, `got "***"`) {
		t.Errorf("error %q: want the key redacted", got.Error)
	}
}

func TestServersDocNamesEveryRowOfTheTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "SERVERS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Server metrics\n")
	if start < 0 {
		t.Fatal("docs/SERVERS.md has no Server metrics section")
	}
	doc = doc[start:]
	if end := strings.Index(doc[1:], "\n## "); end >= 0 {
		doc = doc[:end+1]
	}
	for _, row := range Table {
		name := row.Name
		if row.Server == Glmbench && strings.Contains(doc, "`"+strings.Replace(name, "glmbench:", "sglang:", 1)+"`") {
			continue // "every SGLang row above, as glmbench: + SGLang's name"
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/SERVERS.md's Server metrics does not name %s", name)
		}
	}
}

// A FastAPI server that mounts prometheus_client's ASGI app at /metrics
// (litellm, gpustack, Aphrodite) answers /metrics with a 307 to /metrics/:
// the scrape follows it within the origin, its auth header with it.
func TestScrapeFollowsARedirectWithinItsOrigin(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "vllm.prom"))
	if err != nil {
		t.Fatal(err)
	}
	srv, header := endpointstest.RedirectedMetrics(t, body)
	h := http.Header{}
	h.Set("X-Api-Key", "sk-origin-only-123456")
	got := New(srv.URL+"/metrics", srv.Client(), h).Scrape(context.Background())
	if got.Error != "" || got.Source != "vllm" {
		t.Fatalf("source %q error %q: want vllm's series from /metrics/", got.Source, got.Error)
	}
	if auth := header().Get("X-Api-Key"); auth != "sk-origin-only-123456" {
		t.Errorf("X-Api-Key at /metrics/ %q, want the endpoint's", auth)
	}
}

// A redirect to another host is not followed: the auth headers (Go's
// client keeps an X-Api-Key across hosts) never reach it.
func TestScrapeDoesNotFollowARedirectToAnotherOrigin(t *testing.T) {
	var reached atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
		w.Header().Set("Content-Type", ctText)
		io.WriteString(w, "sglang:num_running_reqs 1\n")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	}))
	defer srv.Close()
	h := http.Header{}
	h.Set("X-Api-Key", "sk-origin-only-123456")
	for _, c := range []*http.Client{nil, {}} {
		got := New(srv.URL+"/metrics", c, h).Scrape(context.Background())
		if !strings.Contains(got.Error, "HTTP 302") || !strings.Contains(got.Error, "not followed") {
			t.Errorf("error %q, want the 302 not followed", got.Error)
		}
		if strings.Contains(got.Error, other.URL) {
			t.Errorf("error %q names the redirect's target", got.Error)
		}
	}
	if reached.Load() {
		t.Error("the other origin was sent the scrape")
	}
}
