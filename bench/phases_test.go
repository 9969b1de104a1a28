package bench

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

func TestSelectPhases(t *testing.T) {
	t.Parallel()
	names := func(ss []Spec) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.String())
		}
		return strings.Join(n, " ")
	}
	for _, tc := range []struct {
		name        string
		phases      string
		given       bool
		custom      []string
		want, wantE string
	}{
		{name: "no flags runs all four in order", want: "single=1/256/256 decode_medium=512/256/256 decode_long=16/8192/256 throughput_8k=929/8192/1024"},
		{name: "a list picks phases in its order", phases: "decode_long,single", given: true, want: "decode_long=16/8192/256 single=1/256/256"},
		{name: "custom phases alone when --phases is not given", custom: []string{"b=4/5/6", "a=1/2/3"}, want: "b=4/5/6 a=1/2/3"},
		{name: "custom phases after the named ones", phases: "single", given: true, custom: []string{"x=1/2/3"}, want: "single=1/256/256 x=1/2/3"},
		{name: "unknown phase is refused", phases: "singel", given: true, wantE: `unknown phase "singel"`},
		{name: "a phase named twice is refused", phases: "single,all", given: true, wantE: "named twice"},
		{name: "custom phase may not take a built-in name", custom: []string{"single=1/2/3"}, wantE: "built-in name"},
		{name: "custom phase may not be all", custom: []string{"all=1/2/3"}, wantE: "built-in name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Select(tc.phases, tc.given, tc.custom)
			if tc.wantE != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantE) || !badinput.Is(err) {
					t.Fatalf("err = %v, want bad input containing %q", err, tc.wantE)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Fatalf("got %s\nwant %s", names(got), tc.want)
			}
		})
	}
}

func TestParsePhaseRejectsBadSpecs(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "x", "x=1/2", "x=1/2/3/4", "X=1/2/3", "1x=1/2/3", "x=0/2/3", "x=1/-2/3", "x=1/2/a", "x=1/2/99999999999", "x y=1/2/3", "=1/2/3"} {
		if _, err := ParsePhase(in); err == nil || !badinput.Is(err) {
			t.Errorf("ParsePhase(%q) = %v, want a bad-input error", in, err)
		}
	}
	s, err := ParsePhase("long-ctx_2=8/32768/64")
	if err != nil || s != (Spec{Name: "long-ctx_2", N: 8, In: 32768, Out: 64}) {
		t.Fatalf("got %+v, %v", s, err)
	}
}

// FuzzParsePhase checks that whatever the parser accepts is a valid phase
// that prints back to itself, and that it never panics.
func FuzzParsePhase(f *testing.F) {
	for _, s := range []string{"a=1/2/3", "x_y-z=929/8192/1024", "all=1/1/1", "a=1/2", "a= 1/ 2/3", "a=+1/2/3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParsePhase(in)
		if err != nil {
			if !badinput.Is(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one bad-input line: %v", err)
			}
			return
		}
		if !phaseName.MatchString(s.Name) || s.N < 1 || s.In < 1 || s.Out < 1 {
			t.Fatalf("accepted invalid %+v from %q", s, in)
		}
		again, err := ParsePhase(s.String())
		if err != nil || again != s {
			t.Fatalf("round trip of %q: %+v, %v", in, again, err)
		}
	})
}
