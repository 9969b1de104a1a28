package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

func isBadInput(err error) bool { return badinput.Is(err) }

// legacyFile is the older harness's output for a run that met a rate
// limiter and some hangs; Python wrote NaN for an empty sample.
const legacyFile = `[
  {"phase": "single", "batch_size": 1, "input_len": 256, "output_len": 64, "completed": 1, "errors": 0,
   "wall_sec": 0.7, "lat_med": 0.69, "lat_p99": 0.69, "ttft_med": 0.05, "ttft_p99": 0.05, "tpot_med": 0.0101,
   "in_tput": 365.7, "out_tput": 91.4, "error_kinds": {}},
  {"phase": "decode_medium", "batch_size": 64, "input_len": 256, "output_len": 64, "completed": 22, "errors": 42,
   "wall_sec": 61.5, "lat_med": 0.71, "lat_p99": NaN, "ttft_med": 0.06, "ttft_p99": 0.2, "tpot_med": 0.0105,
   "in_tput": 91.6, "out_tput": 22.9,
   "error_kinds": {"HTTP 429: Too Many Requests": 30, "ReadTimeout: timed out": 6, "HTTP 503: The request queue is full.": 2,
                   "HTTP 502: Bad Gateway": 1, "HTTP 400: bad NaN value": 1, "ConnectError: [Errno 111]": 1},
   "extra_field_of_a_later_harness": {"ignored": true}}
]`

func TestLegacyFileImportsWithTheRightClasses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "h200_legacy.json")
	if err := os.WriteFile(path, []byte(legacyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := in.Report
	if !in.Legacy || r.Label != "h200_legacy" || len(r.Phases) != 2 || in.Records != nil {
		t.Fatalf("read as %+v", in)
	}
	dm := r.Phases[1]
	want := map[schema.Class]int{schema.RateLimited: 30, schema.Stalled: 6, schema.QueueFull: 2, schema.HTTP5xx: 1,
		schema.HTTP4xx: 1, schema.Unclassified: 2}
	for cl, n := range want {
		if dm.ByClass[cl] != n {
			t.Errorf("%s: %d, want %d (all: %v)", cl, dm.ByClass[cl], n, dm.ByClass)
		}
	}
	if dm.LatP99 != nil || dm.ErrorRate != 42.0/64 || dm.OutTput != 22.9 || *dm.TPOTMed != 0.0105 {
		t.Fatalf("figures: %+v", dm)
	}
	if dm.ErrorKinds["HTTP 400: bad NaN value"] != 1 {
		t.Fatal("NaN inside a string was touched")
	}
}

func TestClassifyLegacyMessagesByPrefix(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]schema.Class{
		"HTTP 429: Too Many Requests":               schema.RateLimited,
		"HTTP 503: The request queue is full.":      schema.QueueFull,
		"HTTP 529: Overloaded":                      schema.QueueFull, // load shed, as a 503
		"HTTP 500: Internal Server Error":           schema.HTTP5xx,
		"HTTP 504":                                  schema.HTTP5xx,
		"HTTP 404: not found":                       schema.HTTP4xx,
		"ReadTimeout":                               schema.Stalled,
		"ReadTimeout: The read operation timed out": schema.Stalled,
		"  HTTP 429 padded":                         schema.RateLimited,
		"ConnectTimeout":                            schema.Unclassified,
		"RemoteProtocolError: peer closed":          schema.Unclassified,
		"":                                          schema.Unclassified,
	} {
		if got := ClassifyLegacy(msg); got != want {
			t.Errorf("%q: %s, want %s", msg, got, want)
		}
	}
}

func TestBadLegacyFilesSayWhatIsWrongInOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data, want string
	}{
		{"an empty list holds no phase", `[]`, "empty list"},
		{"a row without a phase is refused", `[{"batch_size": 1}]`, "row 1 has no phase"},
		{"a repeated phase is refused", `[{"phase":"a"},{"phase":"a"}]`, `phase "a" appears twice`},
		{"a string where a number goes names the row", `[{"phase":"a","completed":"x"}]`, "row 1"},
		{"a syntax error names line and column", "[\n {\"phase\": \"a\",,}\n]", "x.json:2:16: malformed JSON"},
		{"a truncated file is malformed", `[{"phase":"a"`, "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseLegacy("x.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !isBadInput(err) {
				t.Fatalf("got %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

func TestNaNToNullLeavesStringsAndOffsetsAlone(t *testing.T) {
	t.Parallel()
	in := `[NaN, -Infinity, "NaN \"Infinity\"", Infinity, x]`
	out, toOld := nanToNull([]byte(in))
	if want := `[null, null     , "NaN \"Infinity\"", null    , x]`; string(out) != want {
		t.Fatalf("got %q", out)
	}
	if x := int64(strings.IndexByte(string(out), 'x')); in[toOld(x)] != 'x' {
		t.Fatalf("offset %d of x maps to %d", x, toOld(x))
	}
	_, err := ParseLegacy("nan.json", []byte("[\n {\"phase\": NaN, \"x\": ?}]"))
	if err == nil || !strings.Contains(err.Error(), "nan.json:2:") {
		t.Fatalf("got %v", err)
	}
}

func FuzzParseLegacy(f *testing.F) {
	f.Add([]byte(legacyFile))
	f.Add([]byte(`[{"phase":"a","error_kinds":{"HTTP 429":1}}]`))
	f.Add([]byte(`[NaN]`))
	f.Add([]byte(`[{"phase":"a","lat_med":Infinity,"errors":3}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseLegacy("fuzz.json", data)
		if err != nil {
			if !isBadInput(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error not one line of bad input: %v", err)
			}
			return
		}
		for _, ph := range r.Phases {
			sum := 0
			for _, n := range ph.ByClass {
				sum += n
			}
			if sum < ph.Errors {
				t.Fatalf("phase %s: classes sum to %d, errors %d", ph.Phase, sum, ph.Errors)
			}
		}
		var c Comparison
		_ = c
		if _, err := Compare([]*Input{{Path: "fuzz.json", Report: r, Legacy: true}}); err != nil {
			t.Fatalf("a legacy report that loads must compare: %v", err)
		}
	})
}
