// Package scrape reads a serving endpoint's own Prometheus metrics: one GET
// of its /metrics, parsed with prometheus/common's expfmt, and mapped onto
// the common names of reports/schema (Srv*) through one table of known
// series per server (Table): SGLang, vLLM, llama.cpp, TGI and glmbench's
// engine. The load runner scrapes before, during and after each phase;
// what a scrape gives, or why it gave nothing, is one schema.MetricsSample,
// never a Go error that unwinds the run.
package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// DefaultTimeout bounds one scrape where the Scraper sets none: a server's
// exposition is rendered in milliseconds, and a scrape must not hold up a
// phase's end.
const DefaultTimeout = 5 * time.Second

// BodyLimit is the most bytes of an exposition read: a vLLM with many
// label sets writes a few hundred KiB.
const BodyLimit = 16 << 20

// ErrorLimit is the most bytes of a sample's Error.
const ErrorLimit = 300

// accept asks for the text format, which every server here writes. It does
// not name OpenMetrics even at a lower q: Python's prometheus_client
// (SGLang, vLLM) answers OpenMetrics whenever the Accept header names it,
// and expfmt's OpenMetrics parser costs a thousand times the text parser's
// time (see omLineLimit).
const accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// DefaultURL is the metrics URL of an endpoint's API base URL: its origin
// (scheme, user info, host and port) and /metrics, as SGLang, vLLM,
// llama.cpp, TGI and glmbench serve it beside /v1. A base URL that is not
// http(s) with a host gives "". Print it with endpoints.RedactURL: the user
// info is kept so the scrape authenticates as the API does.
func DefaultURL(baseURL string) string {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, Path: "/metrics"}).String()
}

// Scraper scrapes one metrics URL. Its fields are set before the first
// Scrape and not changed after, so that Scrape may run from any goroutine.
type Scraper struct {
	url    string
	client *http.Client
	header http.Header
	// Timeout bounds each scrape beside ctx's own deadline; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Redact, when set, is applied to every error text after the
	// scraper's own redaction of the header values (endpoints.Endpoint's
	// Redact, say, which also finds escaped forms).
	Redact func(string) string
	// Now is the clock Unix is read from; nil means time.Now.
	Now func() time.Time
}

// New returns a scraper of rawURL through a copy of client (nil: a plain
// http.Client), sending header with each GET: the endpoint's auth headers.
// No error text it gives contains one of header's values. The copy follows
// a redirect only within rawURL's origin (scheme, host and port), up to
// maxRedirects: a FastAPI server that mounts prometheus_client's ASGI app
// at /metrics answers it with a 307 to /metrics/ (prometheus/client_python
// issue 1016; litellm, gpustack, Aphrodite), while a redirect elsewhere
// would carry the auth headers to another host (Go's client keeps every
// header but Authorization and Cookie across hosts) and is not followed.
func New(rawURL string, client *http.Client, header http.Header) *Scraper {
	c := &http.Client{}
	if client != nil {
		cc := *client
		c = &cc
	}
	c.CheckRedirect = sameOrigin
	return &Scraper{url: rawURL, client: c, header: header.Clone()}
}

// maxRedirects is the most same-origin redirects a scrape follows.
const maxRedirects = 3

// sameOrigin follows a redirect within the first request's origin, up to
// maxRedirects; any other ends the GET with the redirect as its answer.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) > maxRedirects || req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
		return http.ErrUseLastResponse
	}
	return nil
}

// Scrape GETs the metrics once and maps them (see Parse). It fills Unix
// (when the GET was sent), Source, Values and Hists, or Error: an HTTP
// status, a timeout, a body over BodyLimit, a parse error, no known series.
// The caller fills T, Phase, Point and When.
func (s *Scraper) Scrape(ctx context.Context) schema.MetricsSample {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	start := now()
	sample := s.scrape(ctx)
	sample.Unix = float64(start.Unix()) + float64(start.Nanosecond())/1e9
	if sample.Error != "" {
		// Redacted whole, then cut: expfmt's parse errors quote the
		// offending label value or token, as long as the body's line (a
		// JSON blob served as text/plain is one line of megabytes), and
		// the error is kept in every sample and printed as one line.
		sample.Error = text.Clip(text.OneLine(s.redact(sample.Error)), ErrorLimit, "…")
		sample.Values, sample.Hists = nil, nil
	}
	return sample
}

func (s *Scraper) scrape(ctx context.Context) schema.MetricsSample {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return schema.MetricsSample{Error: "bad metrics URL"}
	}
	for k, vs := range s.header {
		req.Header[k] = vs
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return schema.MetricsSample{Error: failure(ctx, err, timeout)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 == 3 {
			return schema.MetricsSample{Error: fmt.Sprintf("HTTP %s: a redirect to another origin (or past %d), not followed", resp.Status, maxRedirects)}
		}
		return schema.MetricsSample{Error: "HTTP " + resp.Status}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, BodyLimit+1))
	if err != nil {
		return schema.MetricsSample{Error: "reading the body: " + failure(ctx, err, timeout)}
	}
	if len(body) > BodyLimit {
		return schema.MetricsSample{Error: fmt.Sprintf("body over %d MiB", BodyLimit>>20)}
	}
	return Parse(body, resp.Header.Get("Content-Type"))
}

// failure says why a GET or its body failed, without the URL (which may
// carry a password).
func failure(ctx context.Context, err error, timeout time.Duration) string {
	var nerr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return fmt.Sprintf("timed out (limit %s or the caller's deadline)", timeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return "canceled"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return err.Error()
}

// redact replaces the header values (and their long words: the token of
// "Bearer sk-…") in msg with ***, then applies s.Redact.
func (s *Scraper) redact(msg string) string {
	for _, vs := range s.header {
		for _, v := range vs {
			msg = redactValue(msg, v)
			if f := strings.Fields(v); len(f) > 1 {
				for _, w := range f {
					if len(w) >= 8 {
						msg = redactValue(msg, w)
					}
				}
			}
		}
	}
	if s.Redact != nil {
		msg = s.Redact(msg)
	}
	return msg
}

// redactValue replaces v in msg, in any ASCII case; values shorter than 4
// bytes are left (they would blank out ordinary words).
func redactValue(msg, v string) string {
	v = strings.TrimSpace(v)
	if len(v) < 4 {
		return msg
	}
	low, lv := asciiLower(msg), asciiLower(v)
	var b strings.Builder
	for {
		i := strings.Index(low, lv)
		if i < 0 {
			break
		}
		b.WriteString(msg[:i])
		b.WriteString("***")
		msg, low = msg[i+len(v):], low[i+len(v):]
	}
	b.WriteString(msg)
	return b.String()
}

// asciiLower lowercases ASCII letters only, so offsets stay.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Probe scrapes once and says whether the URL answers with known series:
// the source it found, or why not. The runner scrapes a phase only when it
// does.
func (s *Scraper) Probe(ctx context.Context) (source string, err error) {
	sample := s.Scrape(ctx)
	if sample.Error != "" {
		return sample.Source, errors.New("metrics: " + sample.Error)
	}
	return sample.Source, nil
}
