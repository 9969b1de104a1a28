package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/serverside"
)

// NotExposed is what a report shows for a server-side figure whose series
// the server does not expose: never 0.
const NotExposed = "not exposed"

// serverFormulas define the server-side figures, for reports to print
// beside them.
var serverFormulas = []schema.Formula{
	{Metric: "server counters", Formula: "the last answered scrape's value − the first's over the phase (before, every --metrics-interval during, after); none when a counter went down between two scrapes (the server restarted)"},
	{Metric: "server gauges", Formula: "maximum and mean over the answered scrapes during the phase (over all of them when none fell during it)"},
	{Metric: "server quantiles", Formula: serverside.QuantileMethod},
	{Metric: "server cache hit rate", Formula: "Δ prefix-cache hit tokens / Δ tokens looked up where the server counts them, else the mean of its own hit-rate gauge"},
	{Metric: "accept length", Formula: "1 + Δ accepted draft tokens / Δ verify steps (vLLM: drafts) where the server counts them, else the mean of its own gauge"},
	{Metric: "client − server TTFT", Formula: "the client's TTFT p50 − the server's: the network, the server's HTTP front end and tokenizer, and whatever the server's own clock leaves out"},
}

// hasServer reports whether any phase of r has a server block.
func hasServer(r *schema.Report) bool {
	for i := range r.Phases {
		if r.Phases[i].Server != nil {
			return true
		}
	}
	return false
}

// srv writes a server figure ×scale with prec decimals, NotExposed for nil.
func srv(v *float64, scale float64, prec int) string {
	if v == nil {
		return NotExposed
	}
	return num(*v*scale, prec)
}

// clientTokens is the client's sum of a per-second figure over the phase
// (in_tput × wall_sec: Σ usage.prompt_tokens of completed requests), nil
// without the figure or a wall time.
func clientTokens(perSec *float64, wall float64) *float64 {
	if perSec == nil || wall <= 0 {
		return nil
	}
	v := math.Round(*perSec * wall)
	return &v
}

// pair writes a server count beside the client's: "64 / 64".
func pair(server, client *float64) string {
	c := "—"
	if client != nil {
		c = strconv.FormatFloat(*client, 'f', -1, 64)
	}
	return srv(server, 1, 0) + " / " + c
}

// ttftGap is the client's TTFT p50 − the server's in milliseconds with its
// sign, "—" when either is missing.
func ttftGap(ph *schema.PhaseResult) string {
	s := ph.Server
	if ph.TTFTMed == nil || s.TTFTP50 == nil {
		return "—"
	}
	return signedMs(*ph.TTFTMed - *s.TTFTP50)
}

// signedMs writes seconds as milliseconds with one decimal and a sign.
func signedMs(sec float64) string {
	v := num(sec*1e3, 1)
	if !strings.HasPrefix(v, "-") {
		v = "+" + v
	}
	return v
}

// clientHitRate is the phase's client-side hit rate (from the records'
// cached tokens), "—" without a cache block, NotReported when the server
// reported no cached tokens.
func clientHitRate(ph *schema.PhaseResult) string {
	switch {
	case ph.Cache == nil:
		return "—"
	case !ph.Cache.HasHitRate():
		return NotReported
	}
	return pct(*ph.Cache.HitRate)
}

// srvPct writes a server share as a percentage, NotExposed for nil.
func srvPct(v *float64) string {
	if v == nil {
		return NotExposed
	}
	return pct(*v)
}

// serverSource names where a block's figures came from and how many scrapes.
func serverSource(s *schema.ServerStats) string {
	src := orDash(s.Source)
	scrapes := Plural(s.Scrapes, "scrape")
	if s.Failed > 0 {
		scrapes += fmt.Sprintf(", %d failed", s.Failed)
	}
	return src + " (" + scrapes + ")"
}

// serverTable renders, for the phases with a server block, the server's own
// figures beside the client's.
func (p *printer) serverTable(r *schema.Report) {
	if !hasServer(r) {
		return
	}
	p.f("\n## Server side\n\nThe server's own metrics, scraped before, during and after each phase, beside the client's figures " +
		"(server / client). client − server TTFT is the network plus the server's front end (HTTP, tokenizer): what the client " +
		"waits for that the server's histogram does not count. Times in ms (e2e in s); \"" + NotExposed + "\" where the server has no such series.\n\n")
	p.table([]string{"phase", "source", "requests", "prompt tok", "gen tok", "TTFT p50 client", "TTFT p50 server", "client − server",
		"TTFT p99 server", "ITL p50 server", "ITL p50 client", "e2e p50 server", "e2e p50 client", "running max", "queued max", "KV max",
		"cache hit server", "cache hit client", "accept length", "note"},
		func(add func(...string)) {
			for i := range r.Phases {
				ph := &r.Phases[i]
				s := ph.Server
				if s == nil {
					continue
				}
				done := float64(ph.Completed)
				add(ph.Phase, serverSource(s), pair(s.Requests, &done),
					pair(s.PromptTokens, clientTokens(ph.InTput, ph.WallSec)), pair(s.GenerationTokens, clientTokens(&ph.OutTput, ph.WallSec)),
					opt(ph.TTFTMed, 1e3, 1), srv(s.TTFTP50, 1e3, 1), ttftGap(ph), srv(s.TTFTP99, 1e3, 1),
					srv(s.ITLP50, 1e3, 2), opt(ph.ITLMed, 1e3, 2), srv(s.E2EP50, 1, 3), opt(ph.LatMed, 1, 3),
					srv(s.RunningMax, 1, 0), srv(s.QueuedMax, 1, 0), srvPct(s.KVUsageMax),
					srvPct(s.CacheHitRate), clientHitRate(ph), srv(s.AcceptLength, 1, 2), s.Note)
			}
		})
}

// compactServer is the terminal's server-side lines: per phase with a
// server block, its TTFT p50 beside the client's, the request count, the
// peaks of running and queued requests and KV usage, the hit rate and the
// accept length, and its note (failed scrapes, a restart) below. A block
// none of whose scrapes answered says why instead.
func (p *printer) compactServer(r *schema.Report) {
	if !hasServer(r) {
		return
	}
	p.f("\nServer side (its own metrics; TTFT p50 in ms, client − server = network + front end):\n")
	for i := range r.Phases {
		ph := &r.Phases[i]
		s := ph.Server
		if s == nil {
			continue
		}
		head := fmt.Sprintf("  %s: %s: ", fit(ph.Phase, 32), orDash(s.Source))
		if s.Scrapes == 0 {
			p.f("%s\n", fit(head+text.OneLine(s.Note), CompactWidth))
			continue
		}
		ttft := "TTFT " + srv(s.TTFTP50, 1e3, 1)
		if gap := ttftGap(ph); gap != "—" {
			ttft += " vs client " + opt(ph.TTFTMed, 1e3, 1) + " (" + gap + ")"
		}
		items := []string{
			srv(s.Requests, 1, 0) + " req",
			ttft,
			"running ≤ " + srv(s.RunningMax, 1, 0),
			"queued ≤ " + srv(s.QueuedMax, 1, 0),
			"KV ≤ " + srvPct(s.KVUsageMax),
			"hit " + srvPct(s.CacheHitRate),
			"accept " + srv(s.AcceptLength, 1, 2),
		}
		p.f("%s\n", strings.Join(wrap(head, items, "      "), "\n"))
		if s.Note != "" { // failed scrapes, a restart: what the figures cannot say
			p.f("%s\n", fit("      "+text.OneLine(s.Note), CompactWidth))
		}
	}
}
