package target

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/scrape"
	"github.com/glmbench/glmbench/internal/badinput"
)

// MetricsFlags are the flags of the load commands that scrape the
// endpoint's own metrics: --metrics-url, --no-metrics, --metrics-interval.
type MetricsFlags struct {
	URL      string
	Off      bool
	Interval time.Duration
}

// AddFlags binds the metrics flags on fl.
func (m *MetricsFlags) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&m.URL, "metrics-url", "", "the endpoint's Prometheus metrics (default: <origin>/metrics, scraped when it answers)")
	fl.BoolVar(&m.Off, "no-metrics", false, "scrape no server metrics")
	fl.DurationVar(&m.Interval, "metrics-interval", bench.DefaultMetricsInterval, "how often the metrics are scraped during a phase")
}

// minMetricsInterval is the shortest --metrics-interval: a scrape costs the
// server's front end a rendering of every series (vLLM's and SGLang's in
// the process that serves the API), and every sample is kept until the
// phase ends, so back-to-back scrapes would load what is measured and grow
// without bound.
const minMetricsInterval = 100 * time.Millisecond

// Validate checks the metrics flags, before anything is sent.
func (m *MetricsFlags) Validate() error {
	switch {
	case m.Interval < 0:
		return badinput.Errorf("--metrics-interval must not be negative")
	case m.Interval > 0 && m.Interval < minMetricsInterval:
		return badinput.Errorf("--metrics-interval %s: want at least %s (0: the default, %s)", m.Interval, minMetricsInterval, bench.DefaultMetricsInterval)
	case m.Off && m.URL != "":
		return badinput.Errorf("--metrics-url and --no-metrics: give one")
	}
	return nil
}

// probeTimeout bounds the scrape that decides whether to scrape at all.
const probeTimeout = 5 * time.Second

// Open returns the endpoint's scraper, after one scrape that shows the URL
// answers with series of a server glmbench knows, and a line for errOut
// saying what it scrapes or why it scrapes nothing: nil when --no-metrics
// is given, or when the default URL does not answer (the report then has
// no server block). The caller prints the line once the run's input has
// been checked, so that a refusal stays one line. A --metrics-url given
// that does not answer is bad input. The scrapes carry the endpoint's auth
// headers, follow a redirect only within the metrics URL's origin
// (scrape.New), verify TLS as the endpoint's requests do (its --ca-cert,
// --insecure), and nothing they print holds a secret.
func (m *MetricsFlags) Open(ctx context.Context, ep *endpoints.Endpoint) (bench.Scraper, string, error) {
	if m.Off {
		return nil, "", nil
	}
	url, given := m.URL, m.URL != ""
	if !given {
		url = scrape.DefaultURL(ep.BaseURL)
		if url == "" {
			return nil, "", nil
		}
	}
	header := http.Header{}
	ep.Apply(header)
	s := scrape.New(url, scrapeClient(ep), header)
	s.Redact = ep.Redact
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	source, err := s.Probe(pctx)
	if alt := scrape.FallbackURL(ep.BaseURL); err != nil && !given && alt != "" {
		// trtllm-serve answers /metrics with JSON and keeps its series
		// at /prometheus/metrics: scrape there when it has known ones.
		fs := scrape.New(alt, scrapeClient(ep), header)
		fs.Redact = ep.Redact
		if fsource, ferr := fs.Probe(pctx); ferr == nil {
			s, source, err, url = fs, fsource, nil, alt
		}
	}
	shown := ep.Redact(endpoints.RedactURL(url))
	every := m.Interval
	if every == 0 {
		every = bench.DefaultMetricsInterval
	}
	switch {
	case err != nil && given && strings.Contains(err.Error(), "x509: "):
		// Another host's certificate (an exporter beside the server): the
		// scrape trusts what the endpoint's requests trust.
		return nil, "", badinput.Errorf("--metrics-url %s: %v; the scrape verifies as the endpoint's requests do: give a --ca-cert FILE that holds its CA too, or skip verification with --insecure", shown, err)
	case err != nil && given:
		return nil, "", badinput.Errorf("--metrics-url %s: %v", shown, err)
	case err != nil:
		return nil, fmt.Sprintf("glmbench: no server metrics at %s (%v); the report has no server block (--metrics-url names another, --no-metrics says nothing)%s", shown, err, exporterHint(pctx, ep, url, err)), nil
	}
	return s, fmt.Sprintf("glmbench: scraping %s (%s series) every %s", shown, source, every), nil
}

// scrapeClient is the scrapes' HTTP client: Go's default transport (the
// proxy from the environment, HTTP/2 where offered: a scrape is not a
// measured stream) with the endpoint's TLS trust, since the metrics are
// served by the same origin, behind the same certificate. A --metrics-url
// elsewhere is verified alike.
func scrapeClient(ep *endpoints.Endpoint) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = ep.Trust.Config()
	tr.TLSClientConfig.NextProtos = nil
	return &http.Client{Transport: tr}
}
