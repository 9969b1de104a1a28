package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glmbench/glmbench/reports/schema"
)

func compact(t *testing.T, r *schema.Report, mdPath string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCompact(&buf, r, mdPath); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(buf.String(), "\n") {
		if mdPath != "" && line == "Full report: "+mdPath {
			continue // the path is printed whole, to be opened
		}
		if n := utf8.RuneCountInString(line); n > CompactWidth {
			t.Errorf("line %d is %d columns, more than %d:\n%s", i+1, n, CompactWidth, line)
		}
	}
	return buf.String()
}

func TestCompactSummaryMatchesGoldenAndNamesOnlyTheClassesThatOccurred(t *testing.T) {
	t.Parallel()
	got := compact(t, sampleReport(), "glmbench-results/x/report.md")
	golden(t, "compact.txt.golden", []byte(got))
	// The sample's decode_medium failed with rate_limited and stalled only:
	// the other classes never happened, so the summary does not name them.
	for _, c := range schema.Classes {
		occurred := c == schema.RateLimited || c == schema.Stalled
		if strings.Contains(got, string(c)) != occurred {
			t.Errorf("class %s: named %t, occurred %t", c, !occurred, occurred)
		}
	}
	for _, want := range []string{
		"decode_medium: 500 errors: rate_limited 400, stalled 100",
		"400 × HTTP 429: Rate limit | reached",
		"12 requests cancelled in flight at the cap",
		"3 malformed data lines",
		"1 request with usage that is no sound count",
		"Full report: glmbench-results/x/report.md",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// Not Markdown: no table pipes outside the server's own message.
	if strings.Contains(strings.ReplaceAll(got, "Rate limit | reached", ""), "|") {
		t.Errorf("summary has Markdown table rows:\n%s", got)
	}
}

func TestCompactSummaryOfACleanRunHasNoErrorsOrNotes(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Phases = r.Phases[:1]
	r.Phases[0].MalformedEvents, r.Phases[0].MalformedRequests, r.Phases[0].BadUsage = 0, 0, 0
	got := compact(t, r, "")
	if strings.Contains(got, "Errors") || strings.Contains(got, "Notes") || strings.Contains(got, "Full report") {
		t.Fatalf("a clean run's summary has sections it does not need:\n%s", got)
	}
	if !strings.Contains(got, "single  complete") || !strings.Contains(got, "102.4") {
		t.Fatalf("phase row missing:\n%s", got)
	}
}

// A phase that failed every way, with long names and long messages, still
// fits in CompactWidth on every line; the long name is cut, not wrapped.
func TestCompactSummaryFitsWhateverThePhaseNamesAndMessages(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	ph := &r.Phases[1]
	ph.Phase = "a_custom_phase_whose_name_goes_on_" + strings.Repeat("x", 80)
	ph.ByClass, ph.ErrorKinds, ph.Errors = map[schema.Class]int{}, map[string]int{}, 0
	for i, c := range schema.Classes {
		ph.ByClass[c] = 100000 + i
		ph.Errors += 100000 + i
		ph.ErrorKinds[fmt.Sprintf("%s: %s", c, strings.Repeat("a long server message ", 20))] = 100000 + i
	}
	ph.Short, ph.Long, ph.NotSent = 7, 8, 9
	r.Interrupted, r.Client.Saturated, r.Client.MaxSendLag = true, true, 0.025
	path := "/a/very/long/output/folder/" + strings.Repeat("deeper/", 20) + "report.md"
	got := compact(t, r, path)
	if !strings.Contains(got, "Full report: "+path+"\n") {
		t.Errorf("the report's path is not whole:\n%s", got)
	}
	for _, c := range schema.Classes {
		if !strings.Contains(got, fmt.Sprintf("%s %d", c, ph.ByClass[c])) {
			t.Errorf("class %s missing", c)
		}
	}
	// The most frequent kinds come first; the rest are counted.
	last := schema.Classes[len(schema.Classes)-1]
	if !strings.Contains(got, fmt.Sprintf("%d × %s:", ph.ByClass[last], last)) ||
		!strings.Contains(got, fmt.Sprintf("and %d more kinds", len(schema.Classes)-compactKinds)) {
		t.Errorf("top kinds wrong:\n%s", got)
	}
	for _, want := range []string{"a_custom_phase_whose", "…", "7 requests with fewer", "8 requests with more", "9 requests not sent", "interrupted:", "client saturated"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestFitCutsRunesNotBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "ab…"}, {"ééé", 2, "é…"}, {"abc", 0, ""}} {
		if got := fit(tc.in, tc.n); got != tc.want || !utf8.ValidString(got) {
			t.Errorf("fit(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
