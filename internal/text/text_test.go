package text

import (
	"testing"
	"unicode/utf8"
)

func TestOneLineFoldsWhiteSpace(t *testing.T) {
	t.Parallel()
	if got := OneLine("  upstream\n\tsaid:  no \r\n"); got != "upstream said: no" {
		t.Fatalf("%q", got)
	}
}

// Clip counts bytes but never ends inside a character: "é" is 2 bytes and
// "𝄞" 4, so a cut that falls inside one steps back to its start.
func TestClipCutsOnACharacterBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		more string
		want string
	}{
		{"short", 10, "…", "short"},
		{"exactly", 7, "…", "exactly"},
		{"abcdef", 3, "…", "abc…"},
		{"abcdef", 3, "", "abc"},
		{"aé", 2, "…", "a…"},
		{"aé", 3, "…", "aé"},
		{"ab𝄞c", 4, "", "ab"},
		{"ab𝄞c", 6, "", "ab𝄞"},
		{"é", 0, "…", "…"},
		{"abc", -1, "", ""},
	} {
		got := Clip(tc.s, tc.n, tc.more)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.more, got, tc.want)
		}
	}
}

func FuzzClipNeverSplitsACharacter(f *testing.F) {
	f.Add("héllo wörld 𝄞", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) || n < 0 || n > 1<<16 {
			return
		}
		got := Clip(s, n, "")
		if !utf8.ValidString(got) || len(got) > n && len(s) > n || got != s[:len(got)] {
			t.Fatalf("Clip(%q, %d) = %q", s, n, got)
		}
	})
}

func TestThousandsSeparatesEveryThreeDigits(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 8192: "8,192", -1234567: "-1,234,567", 7935232: "7,935,232"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// A server's text shown on a terminal: an escape sequence's ESC and an
// invalid byte become "?", line breaks fold, the cut keeps whole runes.
func TestShownLeavesNoTerminalEscape(t *testing.T) {
	if got := Shown("\x1b[31mred\x1b[0m\nnext \xff é", 100); got != "?[31mred?[0m next ? é" {
		t.Errorf("got %q", got)
	}
	if got := Shown("ééé", 3); got != "é…" {
		t.Errorf("cut: got %q", got)
	}
}
