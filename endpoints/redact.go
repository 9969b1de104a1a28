package endpoints

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// redactedMark replaces a secret wherever it is found.
const redactedMark = "***"

// minSecret is the shortest value treated as a secret: shorter ones (a
// header such as X-Debug=1) would blank out ordinary text.
const minSecret = 4

// minWord is the shortest whitespace-separated word of a secret that is a
// secret on its own: the token of "Bearer sk-…" or "Token abc…" given as a
// --header value, which a server may echo without its scheme.
const minWord = 8

// minPartial is how many characters of a secret, cut off at the end of a
// clipped body, are enough to redact that tail: fewer tell nothing.
const minPartial = 3

// secretSet is what redaction looks for: every secret, ASCII-lowercased,
// and which bytes may start one as a server could have written it.
type secretSet struct {
	secrets [][]byte
	// numeric marks a secret of digits only: it matches only where no digit,
	// sign, point or exponent adjoins it, so a numeric header value never
	// blanks out part of a number in an answer.
	numeric []bool
	start   [256]bool
	longest int
}

// atLeast returns the secrets of n bytes or more; without numeric ones when
// words is set (a body the caller parses as JSON: a number equal to a
// numeric header value cannot be told from data, and *** in its place
// would make the body invalid JSON).
func (ss *secretSet) atLeast(n int, words bool) *secretSet {
	out := newSecretSet()
	for i, s := range ss.secrets {
		if len(s) >= n && !(words && ss.numeric[i]) {
			out.add(s, ss.numeric[i])
		}
	}
	return out
}

// newSecretSet is an empty set; an escape (\) or a percent-encoding (%)
// may start any secret, so both always start a match.
func newSecretSet() *secretSet {
	ss := &secretSet{}
	ss.start['\\'], ss.start['%'] = true, true
	return ss
}

// add puts one lower-cased secret in the set.
func (ss *secretSet) add(low []byte, numeric bool) {
	ss.secrets = append(ss.secrets, low)
	ss.numeric = append(ss.numeric, numeric)
	ss.longest = max(ss.longest, len(low))
	c := low[0]
	ss.start[c] = true
	if 'a' <= c && c <= 'z' {
		ss.start[c-'a'+'A'] = true
	}
}

// foundSecrets is an Endpoint's secrets ready for matching, with the
// inputs they were built from.
type foundSecrets struct {
	from  []string
	all   *secretSet
	words *secretSet // all.atLeast(minWord, true), for 2xx answers
}

// secretsToFind returns the endpoint's secrets ready for matching: the API
// key, every header value, the base URL's password, and the long words of
// each (see minWord). They are built once and rebuilt only when the
// endpoint's secrets change.
func (e *Endpoint) secretsToFind() *foundSecrets {
	if e == nil {
		return &foundSecrets{all: newSecretSet(), words: newSecretSet()}
	}
	from := e.secrets()
	if f := e.found.Load(); f != nil && slices.Equal(f.from, from) {
		return f
	}
	ss := newSecretSet()
	seen := map[string]bool{}
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < minSecret || seen[v] {
			return
		}
		seen[v] = true
		ss.add([]byte(asciiLower(v)), strings.Trim(v, "0123456789") == "")
	}
	for _, s := range from {
		add(s)
		if f := strings.Fields(s); len(f) > 1 {
			for _, w := range f {
				if len(w) >= minWord {
					add(w)
				}
			}
		}
	}
	f := &foundSecrets{from: from, all: ss, words: ss.atLeast(minWord, true)}
	e.found.Store(f)
	return f
}

// Redact replaces every secret of the endpoint (the API key, every header
// value, a password in the base URL) found in s with "***", so nothing that
// quotes a server's answer can leak one. See RedactBytes for the forms found.
func (e *Endpoint) Redact(s string) string {
	ss := e.secretsToFind().all
	if len(ss.secrets) == 0 {
		return s
	}
	out, changed := ss.redact([]byte(s), false)
	if !changed {
		return s
	}
	return string(out)
}

// RedactBytes is Redact for bytes: it returns b itself when no secret is in
// it, else a redacted copy. A secret is found written as it is, in any ASCII
// letter case, JSON-escaped (\/, \", \uXXXX, behind any number of
// backslashes, as JSON quoted inside JSON gives it), percent-encoded, or any
// mix of these; a secret of digits only, where no other digit, sign, point
// or exponent adjoins it (not inside a longer number). Not found: other encodings (base64 and the like) and
// fragments of a secret other than a cut-off tail (see ClipBody).
func (e *Endpoint) RedactBytes(b []byte) []byte {
	ss := e.secretsToFind().all
	if len(ss.secrets) == 0 {
		return b
	}
	out, _ := ss.redact(b, false)
	return out
}

// BodyWindow is how many bytes of a failed body to read before redacting and
// clipping it to BodyLimit: enough that a secret starting before the cut,
// even escaped at six bytes a character, is read whole.
func (e *Endpoint) BodyWindow() int {
	return e.secretsToFind().all.window()
}

// window is BodyWindow for the set.
func (ss *secretSet) window() int { return BodyLimit + 6*ss.longest + 64 }

// ClipBody returns at most BodyLimit bytes of b redacted: it redacts the
// first BodyWindow bytes, then clips, so a secret straddling the cut leaks no
// prefix. more says the body went on past b (as does a b longer than the
// window); then a tail of what was read that spells the start of a secret
// (minPartial characters or more) is redacted too.
func (e *Endpoint) ClipBody(b []byte, more bool) []byte {
	f := e.secretsToFind()
	if w := f.all.window(); len(b) > w {
		b, more = b[:w], true
	}
	ss := f.all
	out := b
	if len(ss.secrets) > 0 {
		out, _ = ss.redact(b, more)
	}
	if len(out) > BodyLimit {
		out = out[:BodyLimit]
	}
	return append([]byte(nil), out...)
}

// redact returns b with every secret replaced by the mark, and whether any
// was. With partialTail, a tail of b that matches the start of a secret is
// replaced too.
func (ss *secretSet) redact(b []byte, partialTail bool) ([]byte, bool) {
	var out []byte
	changed := false
	copied := 0 // b[:copied] is already in out
	for i := 0; i < len(b); {
		if !ss.start[b[i]] {
			i++
			continue
		}
		end, tail := 0, false
		for k, s := range ss.secrets {
			e, full, partial := matchAt(b, i, s)
			if full && ss.numeric[k] && (i > 0 && numberByte(b[i-1]) || e < len(b) && numberByte(b[e])) {
				full = false
			}
			if full && e > end {
				end = e
			}
			if partial && partialTail {
				tail = true
			}
		}
		if end == 0 && tail {
			end = len(b)
		}
		if end == 0 {
			i++
			continue
		}
		if !changed {
			out = make([]byte, 0, len(b))
			changed = true
		}
		out = append(out, b[copied:i]...)
		out = append(out, redactedMark...)
		copied, i = end, end
	}
	if !changed {
		return b, false
	}
	return append(out, b[copied:]...), true
}

// matchAt matches secret s (lowercase) against b from i, one written
// character (unit) at a time. full: the whole secret, ending at end.
// partial: b ended after at least minPartial characters of it matched.
func matchAt(b []byte, i int, s []byte) (end int, full, partial bool) {
	var buf [utf8.UTFMax]byte
	j, units := 0, 0
	for j < len(s) {
		if i >= len(b) {
			return 0, false, units >= minPartial
		}
		dec, n, complete := unit(b, i, &buf)
		if !complete {
			return 0, false, units >= minPartial
		}
		if !spells(dec, s[j:]) {
			// A '\' or '%' that is part of the secret itself.
			if n == 1 || asciiLowerByte(b[i]) != s[j] {
				return 0, false, false
			}
			dec, n = b[i:i+1], 1
		}
		j += len(dec)
		i += n
		units++
	}
	return i, true, false
}

// spells reports whether dec is the start of s (lowercase), in any ASCII case.
func spells(dec, s []byte) bool {
	if len(dec) > len(s) {
		return false
	}
	for k, c := range dec {
		if asciiLowerByte(c) != s[k] {
			return false
		}
	}
	return true
}

// unit decodes the one character written at b[i] as a server may have
// written it: raw; JSON-escaped behind one or more backslashes (\uXXXX, \n
// and its kin, or any other escaped byte such as \/ or \"); or
// percent-encoded (%2F). complete is false when b ends inside an escape.
func unit(b []byte, i int, buf *[utf8.UTFMax]byte) (dec []byte, n int, complete bool) {
	switch b[i] {
	case '\\':
		k := i
		for k < len(b) && b[k] == '\\' {
			k++
		}
		if k == len(b) {
			return nil, 0, false
		}
		switch c := b[k]; c {
		case 'u':
			if k+5 > len(b) {
				return nil, 0, false
			}
			r, ok := hex(b[k+1 : k+5])
			if !ok {
				return b[i : i+1], 1, true
			}
			m := utf8.EncodeRune(buf[:], rune(r))
			return buf[:m], k + 5 - i, true
		case 'n', 't', 'r', 'b', 'f':
			buf[0] = jsonEscapes[c]
			return buf[:1], k + 1 - i, true
		default:
			buf[0] = c
			return buf[:1], k + 1 - i, true
		}
	case '%':
		if i+3 > len(b) {
			return nil, 0, false
		}
		if v, ok := hex(b[i+1 : i+3]); ok {
			buf[0] = byte(v)
			return buf[:1], 3, true
		}
	}
	return b[i : i+1], 1, true
}

func numberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

func hex(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

func asciiLowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiLower lowercases ASCII letters only, so lengths and offsets stay.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = asciiLowerByte(c)
	}
	return string(b)
}

// jsonEscapes is what the one-letter JSON escapes stand for.
var jsonEscapes = [256]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}
