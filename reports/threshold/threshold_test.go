package threshold

import (
	"errors"
	"strings"
	"testing"
)

func TestParseReadsTheFourKindsOfThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     Threshold
		str      string
	}{
		{"an absolute bound on one phase", "single.tpot_med < 0.015",
			Threshold{Scope: "single", Metric: "tpot_med", Op: LT, Value: 0.015}, "single.tpot_med < 0.015"},
		{"a relative bound against the baseline", "decode_medium.out_tput > -5%",
			Threshold{Scope: "decode_medium", Metric: "out_tput", Op: GT, Value: -5, Relative: true}, "decode_medium.out_tput > -5%"},
		{"a bound over every phase", "*.error_rate <= 0.01",
			Threshold{Scope: All, Metric: "error_rate", Op: LE, Value: 0.01}, "*.error_rate <= 0.01"},
		{"a relative bound on an eval", "ppl.ppl < +1%",
			Threshold{Scope: "ppl", Metric: "ppl", Op: LT, Value: 1, Relative: true}, "ppl.ppl < +1%"},
		{"no blanks at all", "single.ttft_p99<=2", Threshold{Scope: "single", Metric: "ttft_p99", Op: LE, Value: 2}, "single.ttft_p99 <= 2"},
		{"blanks everywhere between tokens", "  long-ppl.worst_seg   >=  3 ", Threshold{Scope: "long-ppl", Metric: "worst_seg", Op: GE, Value: 3}, "long-ppl.worst_seg >= 3"},
		{"an unsigned percent is a rise", "x.tpot_med < 5 %", Threshold{Scope: "x", Metric: "tpot_med", Op: LT, Value: 5, Relative: true}, "x.tpot_med < +5%"},
		{"equality and inequality", "x.rate_limited == 0", Threshold{Scope: "x", Metric: "rate_limited", Op: EQ}, "x.rate_limited == 0"},
		{"an exponent", "x.completed != 1e3", Threshold{Scope: "x", Metric: "completed", Op: NE, Value: 1000}, "x.completed != 1000"},
		{"a negative absolute value", "x.change > -0.5", Threshold{Scope: "x", Metric: "change", Op: GT, Value: -0.5}, "x.change > -0.5"},
		{"a leading dot", "x.out_tput > .5", Threshold{Scope: "x", Metric: "out_tput", Op: GT, Value: 0.5}, "x.out_tput > 0.5"},
		{"a sweep's capacity", "sweep.capacity > -5%", Threshold{Scope: "sweep", Metric: "capacity", Op: GT, Value: -5, Relative: true}, "sweep.capacity > -5%"},
		{"a sweep point's metric at a rate", "sweep.goodput@0.5 >= 0.4", Threshold{Scope: "sweep", Metric: "goodput@0.5", Op: GE, Value: 0.4}, "sweep.goodput@0.5 >= 0.4"},
		{"a field of a phase's block", "chat.cache.hit_rate > -5%", Threshold{Scope: "chat", Metric: "cache.hit_rate", Op: GT, Value: -5, Relative: true}, "chat.cache.hit_rate > -5%"},
		{"a block's field at a sweep point", "sw.cache.ttft_med_hit@8 < 0.2", Threshold{Scope: "sw", Metric: "cache.ttft_med_hit@8", Op: LT, Value: 0.2}, "sw.cache.ttft_med_hit@8 < 0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.str {
				t.Fatalf("String() = %q, want %q", got.String(), tc.str)
			}
		})
	}
}

func TestParseRefusesWhatIsNotAThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"an empty string", "", "no operator"},
		{"no operator", "single.out_tput 5", "no operator"},
		{"a lone equals sign", "single.out_tput = 5", "unknown operator"},
		{"k6's triple equals", "single.out_tput === 5", "bad number"},
		{"no scope", "out_tput > 5", "has no scope"},
		{"no metric", "single. > 5", "bad metric name"},
		{"an upper-case metric", "single.OUT > 5", "bad metric name"},
		{"a scope with a space", "my phase.out_tput > 5", "bad phase or eval name"},
		{"no value", "single.out_tput >", "no value"},
		{"no value before the percent", "single.out_tput > %", "no value"},
		{"a word for a value", "single.out_tput > fast", "bad number"},
		{"a NaN", "single.out_tput > NaN", "bad number"},
		{"an infinity", "single.out_tput > inf", "bad number"},
		{"a hex float", "single.out_tput > 0x1p3", "bad number"},
		{"a number too large", "single.out_tput > 1e999", "out of range"},
		{"two signs", "single.out_tput > --5%", "bad number"},
		{"a trailing word", "single.out_tput > 5 tok/s", "bad number"},
		{"no selector", "> 5", "no metric"},
		{"an @ with no load", "sweep.goodput@ > 5", "bad metric name"},
		{"an @ with a word", "sweep.goodput@high > 5", "bad metric name"},
		{"an empty block field", "chat.cache. > 5", "bad metric name"},
		{"two dots in a row", "chat.cache..hit_rate > 5", "bad metric name"},
		{"a block field starting with a digit", "chat.cache.9x > 5", "bad metric name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.in)
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `"`+tc.in+`"`) {
				t.Fatalf("error %q does not quote the input", err)
			}
		})
	}
}

func TestHoldsAndCrossedOverAgree(t *testing.T) {
	t.Parallel()
	for _, op := range ops {
		th := Threshold{Scope: "x", Metric: "m", Op: op, Value: 1}
		for _, x := range []float64{0, 1, 2} {
			// A degenerate interval [x, x] is crossed exactly when x fails.
			if th.CrossedOver(x, x) == th.Holds(x) {
				t.Errorf("%s at %v: Holds %v, CrossedOver %v", th, x, th.Holds(x), th.CrossedOver(x, x))
			}
		}
		// An interval around the bound is never wholly past it.
		if th.Op != NE && th.CrossedOver(0, 2) {
			t.Errorf("%s: [0, 2] counted as crossed", th)
		}
	}
}

func TestDefaultsAreTheIssuesThree(t *testing.T) {
	t.Parallel()
	var got []string
	for _, d := range Defaults() {
		got = append(got, d.String())
	}
	if s := strings.Join(got, ", "); s != "*.out_tput > -5%, *.ttft_p99 < +10%, *.tpot_med < +5%" {
		t.Fatal(s)
	}
}

func TestParseFileTakesThreeShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"a bare list", "- single.tpot_med < 0.015\n- '*.error_rate <= 0.01'\n", "single.tpot_med < 0.015|*.error_rate <= 0.01"},
		{"a list under thresholds", "thresholds:\n  - decode_medium.out_tput > -5%\n", "decode_medium.out_tput > -5%"},
		{"k6's map, in sorted order", "thresholds:\n  single.ttft_p99: '< 2'\n  decode_medium.out_tput: ['> -5%', '> 1000']\n",
			"decode_medium.out_tput > -5%|decode_medium.out_tput > 1000|single.ttft_p99 < 2"},
		{"JSON is YAML too", `{"thresholds": ["ppl.ppl < +1%"]}`, "ppl.ppl < +1%"},
		{"an empty file has none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ths, err := ParseFile([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, th := range ths {
				got = append(got, th.String())
			}
			if s := strings.Join(got, "|"); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
		})
	}
	for _, bad := range []string{"thresholds: 5", "other: []", "- 5", "thresholds:\n  x.y: [1]", "- x.y ~ 1", "thresholds: [\n"} {
		if _, err := ParseFile([]byte(bad)); !errors.Is(err, ErrSyntax) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line of ErrSyntax", bad, err)
		}
	}
}

func FuzzParseRoundTrips(f *testing.F) {
	for _, s := range []string{
		"single.tpot_med < 0.015", "decode_medium.out_tput > -5%", "*.error_rate <= 0.01", "ppl.ppl < +1%",
		"a.b==1e-7", "x.y != -0%", "x.y >= 1.5e+300", "x.y > .5 %", "a-b_C.d_1 < 0.", "chat.cache.hit_rate > -5%", "s.cache.ttft_med_hit@8<1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(th.String())
		if err != nil {
			t.Fatalf("%q parsed, but its String %q did not: %v", s, th.String(), err)
		}
		if again != th || again.String() != th.String() {
			t.Fatalf("%q → %+v → %q → %+v", s, th, th.String(), again)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("decode_medium.out_tput > -5%"); err != nil {
			b.Fatal(err)
		}
	}
}
