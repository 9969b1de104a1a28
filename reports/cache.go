package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// NotReported is what a report shows for a hit rate the server did not
// report: never 0%.
const NotReported = "not reported"

// cacheFormulas define the prefix-cache and drift figures, for reports to
// print beside them.
var cacheFormulas = []schema.Formula{
	{Metric: "hit_rate", Formula: "Σ cached tokens (usage.prompt_tokens_details.cached_tokens) / Σ usage.prompt_tokens over the completed requests that reported cached tokens; \"" + NotReported + "\" when none did"},
	{Metric: "expected_hit_rate", Formula: "Σ expected cached tokens (the prefix the workload built to repeat an earlier request's) / Σ usage.prompt_tokens over the completed requests the workload gave one"},
	{Metric: "hit", Formula: fmt.Sprintf("a reporting request with at least %d%% of its prompt tokens cached; a miss is any other reporting request", summary.HitPercent)},
	{Metric: "prompt_drift", Formula: "usage.prompt_tokens − the workload's target, over completed requests with a target; tolerance max(4, 1% of the mean target)"},
}

// hasCache reports whether any phase of r has a cache block, and whether
// any has prompt drift.
func hasCache(r *schema.Report) (cache, drift bool) {
	for i := range r.Phases {
		cache = cache || r.Phases[i].Cache != nil
		drift = drift || r.Phases[i].PromptDrift != nil
	}
	return cache, drift
}

// pct writes a share as a percentage with one decimal: "70.3%".
func pct(v float64) string { return num(v*100, 1) + "%" }

// workloadKind is a phase's workload kind on one line and at most 16 runes
// (the longest kind, shared-prefix, has 13), "—" for a built-in or --phase
// one.
func workloadKind(ph *schema.PhaseResult) string { return fit(text.OneLine(orDash(ph.Workload)), 16) }

// cacheCells are a cache block's figures as the tables show them: hit rate
// (NotReported when the server said nothing), expected hit rate,
// cached/prompt tokens, hits/misses, and the TTFT medians of hits and
// misses in seconds.
func cacheCells(c *schema.CacheStats) []string {
	hit, tokens, split := NotReported, "—", "—"
	if c.HasHitRate() {
		hit = pct(*c.HitRate)
		if c.CachedTokens != nil { // a report.json written by hand may lack it
			tokens = fmt.Sprintf("%d/%d", *c.CachedTokens, c.PromptTokens)
		}
		split = fmt.Sprintf("%d/%d", c.Hits, c.Misses)
	}
	exp := "—"
	if c.ExpectedHitRate != nil {
		exp = pct(*c.ExpectedHitRate)
	}
	return []string{hit, exp, tokens, split, opt(c.TTFTMedHit, 1, 3), opt(c.TTFTMedMiss, 1, 3)}
}

// signed writes a token count with its sign: "+4", "-2.5", "0".
func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// tokens writes a token figure in at most one decimal: "4", "4.8".
func tokens(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// round1 is v to one decimal, so a percentile between two counts reads short.
func round1(v float64) float64 {
	s, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 1, 64), 64)
	return s
}

// driftWithin says whether a drift stayed within its tolerance, in words.
func driftWithin(d *schema.Drift) string {
	if d.Within() {
		return "within"
	}
	return "past"
}

// cacheTables renders, for the phases with a cache block, the prefix-cache
// table, and for those with prompt drift, the drift table.
func (p *printer) cacheTables(r *schema.Report) {
	cache, drift := hasCache(r)
	if cache {
		p.f("\n## Prefix cache\n\nhit rate = cached / prompt tokens over the requests that reported cached tokens; "+
			"expected = what the workload was built to let a cache serve. A hit has at least %d%% of its prompt cached. TTFT in seconds.\n\n", summary.HitPercent)
		p.table([]string{"phase", "workload", "hit rate", "expected", "cached/prompt tok", "hits/misses", "TTFT med hit", "TTFT med miss", "note"},
			func(add func(...string)) {
				for i := range r.Phases {
					ph := &r.Phases[i]
					if ph.Cache == nil {
						continue
					}
					add(append(append([]string{ph.Phase, workloadKind(ph)}, cacheCells(ph.Cache)...), ph.Cache.Note)...)
				}
			})
	}
	if drift {
		p.f("\n## Prompt length drift\n\nusage.prompt_tokens − the workload's target, in tokens, over completed requests with a target; abs p99 is the p99 of its size.\n\n")
		p.table([]string{"phase", "requests", "p50", "p99", "abs p99", "tolerance", "abs p99 vs tolerance"}, func(add func(...string)) {
			for i := range r.Phases {
				ph := &r.Phases[i]
				if d := ph.PromptDrift; d != nil {
					add(ph.Phase, strconv.Itoa(d.N), signed(round1(d.P50)), signed(round1(d.P99)), tokens(round1(d.AbsP99)),
						strconv.Itoa(d.Tolerance), driftWithin(d))
				}
			}
		})
	}
}

// compactCache is the terminal's prefix-cache table and drift lines. A
// report none of whose phases has anything but "the server reports no
// cached tokens" (no hit rate, no expectation, no workload) gets that one
// line instead of a table of them.
func (p *printer) compactCache(r *schema.Report) {
	cache, drift := hasCache(r)
	if !cache {
		return
	}
	telling := false
	for i := range r.Phases {
		ph := &r.Phases[i]
		telling = telling || ph.Cache != nil && (ph.Cache.HasHitRate() || ph.Cache.ExpectedHitRate != nil || ph.Workload != "")
	}
	if !telling {
		p.f("\nPrefix cache: %s.\n", summary.NoCachedTokens)
	} else {
		p.f("\nPrefix cache (hit: at least %d%% of the prompt cached; TTFT in seconds):\n\n", summary.HitPercent)
		rows := [][]string{{"phase", "workload", "hit rate", "expected", "cached/prompt", "hits/misses", "TTFT hit", "TTFT miss"}}
		var notes []string
		for i := range r.Phases {
			ph := &r.Phases[i]
			if ph.Cache == nil {
				continue
			}
			rows = append(rows, append([]string{ph.Phase, workloadKind(ph)}, cacheCells(ph.Cache)...))
			if ph.Cache.Note != "" && ph.Cache.HasHitRate() { // the silent ones say so in their cell
				notes = append(notes, fit(fmt.Sprintf("  %s: %s", fit(ph.Phase, 32), text.OneLine(ph.Cache.Note)), CompactWidth))
			}
		}
		for _, line := range alignRows(rows, 2) {
			p.f("%s\n", line)
		}
		if len(notes) > 0 {
			p.f("%s\n", strings.Join(notes, "\n"))
		}
	}
	if drift {
		p.f("\nPrompt length drift (actual − target tokens):\n")
		for i := range r.Phases {
			ph := &r.Phases[i]
			if d := ph.PromptDrift; d != nil {
				p.f("%s\n", fit(fmt.Sprintf("  %s: p50 %s, p99 %s, |p99| %s %s the tolerance of %d (%s)", fit(ph.Phase, 32),
					signed(round1(d.P50)), signed(round1(d.P99)), tokens(round1(d.AbsP99)), driftWithin(d), d.Tolerance,
					Plural(d.N, "request")), CompactWidth))
			}
		}
	}
}
