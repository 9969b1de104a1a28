// Package text holds the small string helpers every layer uses for what it
// says to a person: folding a message onto one line, cutting it to a
// length without splitting a character, showing a server's text with no
// terminal escape, writing a count with thousands separators. It imports
// nothing of the project.
package text

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine folds s onto one line: runs of white space, line breaks
// included, become one space, and the ends are trimmed.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip returns s when it is at most n bytes long; else its longest prefix
// of at most n bytes that ends on a character boundary, followed by more
// ("…" to mark the cut, "" for none). A character is never cut in half.
func Clip(s string, n int, more string) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}

// Thousands writes n with thousands separators: 8192 is "8,192".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// Shown is a server's text as one line of a terminal may hold it: valid
// UTF-8 (an invalid byte as "?"), folded onto one line, a control
// character (a terminal escape) as "?", cut as Clip cuts it: at most n
// bytes, then "…" when something was cut.
func Shown(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return Clip(OneLine(s), n, "…")
}
