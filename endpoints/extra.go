package endpoints

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
)

// ParseExtraBody reads a JSON object of fields to add to every request body
// (--extra-body, as SGLang's bench_serving --extra-request-body and vLLM's
// bench serve --extra-body): a hybrid reasoning model's
// {"chat_template_kwargs": {"enable_thinking": false}}, sampling fields such
// as {"temperature": 0.6, "top_p": 0.95}, OpenAI's {"reasoning_effort":
// "low"}. owned maps each field the caller writes itself to what sets it
// instead; a field there is refused, since the body would carry it twice
// and servers differ in which one they read, and so is one that differs
// from it only in letter case (Unicode simple folding): a server in Go
// (Ollama, LocalAI, many gateways) reads a body with encoding/json, which
// matches names so and lets the later one win. The result is the object
// in one canonical text (see canonical), nil for "" or {}. Its errors are
// bad input, in one line.
func ParseExtraBody(flag, s string, owned map[string]string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if !utf8.ValidString(s) {
		// encoding/json keeps a string's bytes in a RawMessage as they
		// are: they would go into every body, which JSON wants in UTF-8
		// (RFC 8259) and Python servers refuse whole.
		return nil, badinput.Errorf("%s is not UTF-8 (at byte %d)", flag, invalidAt(s))
	}
	var fields map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber() // numbers keep their digits
	if err := d.Decode(&fields); err != nil || fields == nil {
		return nil, badinput.Errorf("%s must be a JSON object such as '{\"temperature\": 0.6}', not %q", flag, quoted(s))
	}
	if strings.TrimSpace(s[d.InputOffset():]) != "" {
		return nil, badinput.Errorf("%s must be one JSON object: %q has more after it", flag, quoted(s))
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if name, ok := ownedAs(k, owned); ok && name == k {
			return nil, badinput.Errorf("%s sets %q, which glmbench writes itself: %s", flag, k, owned[name])
		} else if ok {
			return nil, badinput.Errorf("%s sets %q, which glmbench writes itself as %q (a server in Go reads names in any letter case): %s", flag, k, name, owned[name])
		}
	}
	if len(fields) == 0 {
		return nil, nil
	}
	b, err := canonical(fields)
	if err != nil {
		return nil, badinput.Errorf("%s: %s", flag, text.OneLine(err.Error()))
	}
	return b, nil
}

// canonical is v, decoded with UseNumber, as one compact text: every
// object's fields in name order at any depth, a duplicate resolved as it
// was decoded (the last wins, as in Python's json), each string's escapes
// written one way, numbers with their digits, < > & as they are. One
// object written two ways gives one text, so the gate and one label's
// merged runs compare the fields, not how they were typed.
func canonical(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // the report shows a stop string's <|user|> as given
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// quoted is s, an --extra-body that did not parse, as its error quotes
// it: the first 60 bytes, with the value after each credential's name
// ("api_key": "sk-…", see credentialName) written *** (a string, a bare
// word, an object or array to its end), found by a scan of the text that
// needs no valid JSON, so a CI job that builds the body from a secret does
// not print it.
func quoted(s string) string {
	var b strings.Builder
	key, colon := false, false // a credential's name was read; then its colon
	for i := 0; i < len(s); {
		c := s[i]
		j := i + 1
		switch {
		case colon && !strings.ContainsRune(" \t\n\r,}]", rune(c)):
			j = valueEnd(s, i)
			b.WriteString(redactedMark)
			key, colon = false, false
			i = j
			continue
		case c == '"':
			j = stringEnd(s, i)
			var name string
			if json.Unmarshal([]byte(s[i:j]), &name) != nil {
				name = strings.Trim(s[i:j], `"`)
			}
			key = credentialName(name)
		case c == ':':
			colon, key = key, false
		case !strings.ContainsRune(" \t\n\r", rune(c)):
			key, colon = false, false
		}
		b.WriteString(s[i:j])
		i = j
	}
	return text.Clip(b.String(), 60, "…")
}

// stringEnd is the offset just past the JSON string that starts at s[i]
// ('"'), or len(s) when it does not end.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

// valueEnd is the offset just past the JSON value that starts at s[i],
// read loosely: a string, an object or array to its matching bracket, or
// a bare word to the next , } ] or space; len(s) when it does not end.
func valueEnd(s string, i int) int {
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = stringEnd(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	if k := strings.IndexAny(s[i:], ",}] \t\n\r"); k > 0 {
		return i + k
	}
	return len(s)
}

// invalidAt is the offset of s's first byte that is not UTF-8 (len(s)
// when none): an error names where, not what, since the text may hold a
// key.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}

// ownedAs is the owned field k is read as: k itself, else the one it
// equals in any letter case, as encoding/json matches them.
func ownedAs(k string, owned map[string]string) (string, bool) {
	if _, ok := owned[k]; ok {
		return k, true
	}
	for name := range owned {
		if strings.EqualFold(k, name) {
			return name, true
		}
	}
	return "", false
}

// ExtraFields names extra's fields in order (none for nil).
func ExtraFields(extra json.RawMessage) []string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(extra, &fields) != nil {
		return nil
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// WithExtra returns body, a marshalled JSON object, with extra's fields
// (ParseExtraBody's object) added at its end. A nil, empty or null extra
// leaves body as it is. Fields are spliced in as bytes, so a body built
// once keeps every offset before its end (bench patches prompt digits at
// fixed offsets).
func WithExtra(body []byte, extra json.RawMessage) []byte {
	inner := bytes.TrimSpace(extra)
	if len(inner) < 2 || inner[0] != '{' {
		return body
	}
	inner = bytes.TrimSpace(inner[1 : len(inner)-1])
	end := bytes.LastIndexByte(body, '}')
	if len(inner) == 0 || end < 1 {
		return body
	}
	out := make([]byte, 0, len(body)+len(inner)+1)
	out = append(out, body[:end]...)
	if len(bytes.TrimSpace(body[1:end])) > 0 { // body has fields of its own
		out = append(out, ',')
	}
	out = append(out, inner...)
	return append(out, body[end:]...)
}

// RecordedExtra is extra (ParseExtraBody's object) as a report, a gate's
// message or a comparison shows it, one JSON object in canonical text with
// no secret in it: the value of a field named as a credential (see
// credentialName), at any depth, is "***", and every other string (and
// number) passes through ep's Redact, so an API key or header value put
// in the body under another name is not shown either (ep nil: names
// only). The requests carry extra as it is: a gateway that reads its key
// from the body needs it. nil for none.
func RecordedExtra(extra json.RawMessage, ep *Endpoint) json.RawMessage {
	if len(extra) == 0 {
		return nil
	}
	var v any
	if decodeNumbers(extra, &v) != nil {
		return ep.RedactBytes(extra) // never ParseExtraBody's
	}
	b, err := canonical(hideSecrets(v, ep, nil))
	if err != nil {
		return ep.RedactBytes(extra)
	}
	return b
}

// hideSecrets is v (decoded with UseNumber) with its secrets replaced by
// redactedMark, as RecordedExtra says; hidden, when not nil, is given each
// value it hides by its field's name.
func hideSecrets(v any, ep *Endpoint, hidden func(any)) any {
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			if credentialName(k) {
				if hidden != nil {
					hidden(val)
				}
				v[k] = redactedMark
			} else {
				v[k] = hideSecrets(val, ep, hidden)
			}
		}
	case []any:
		for i := range v {
			v[i] = hideSecrets(v[i], ep, hidden)
		}
	case string:
		return ep.Redact(v)
	case json.Number:
		if ep.Redact(v.String()) != v.String() {
			return redactedMark // a header value of digits, sent as a number
		}
	}
	return v
}

// credentialWords are the words of a field name that make its value a
// credential: api_key, x-api-key, access_token, accessToken, password,
// Authorization, client_secret.
var credentialWords = map[string]bool{
	"apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"auth": true, "authorization": true, "credential": true, "credentials": true,
	"cookie": true, "bearer": true,
}

// keyWords are the words that make a following "key" a credential's
// (api_key, access-key, subscription_key), where prompt_cache_key is
// data.
var keyWords = map[string]bool{"api": true, "access": true, "secret": true, "private": true, "auth": true, "subscription": true}

// credentialName reports whether field name k names a credential: one of
// its words (split at anything but letters and digits, and where a lower
// case letter meets an upper case one) is a credentialWords word, or it
// is "key" alone or after a keyWords word. max_tokens, author and
// prompt_cache_key are not.
func credentialName(k string) bool {
	var words []string
	start, prev := -1, rune(0)
	for i, r := range k {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		camel := unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
		if start >= 0 && (!alnum || camel) {
			words, start = append(words, strings.ToLower(k[start:i])), -1
		}
		if alnum && start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		words = append(words, strings.ToLower(k[start:]))
	}
	for i, w := range words {
		if credentialWords[w] || w == "key" && (len(words) == 1 || i > 0 && keyWords[words[i-1]]) {
			return true
		}
	}
	return false
}

// FieldsNamed returns those of fields, in their order, that msg (a
// server's error message) names as a word, with no letter, digit or _
// beside it: "top_k" in OpenAI's "Unrecognized request argument supplied:
// top_k", not in "top_k_max". It is how a refusal is traced to the fields
// --extra-body added.
func FieldsNamed(msg string, fields []string) []string {
	var named []string
	for _, k := range fields {
		if containsWord(msg, k) {
			named = append(named, k)
		}
	}
	return named
}

// containsWord reports whether w stands in s with no letter, digit or _
// next to it.
func containsWord(s, w string) bool {
	word := func(b byte) bool { return b == '_' || '0' <= b && b <= '9' || 'a' <= b|0x20 && b|0x20 <= 'z' }
	for i := 0; w != ""; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(w)
		if (at == 0 || !word(s[at-1])) && (end == len(s) || !word(s[end])) {
			return true
		}
		i = at + 1
	}
	return false
}

// HideExtraSecrets makes e's redaction hide, besides its key and header
// values, each value extra (ParseExtraBody's object) sends under a
// credential's name, as RecordedExtra hides it: a gateway's key sent in the
// body ("api_key"), which a server may quote back in an error (pydantic's
// validation errors quote a field's input). Call it before e is in use.
func (e *Endpoint) HideExtraSecrets(extra json.RawMessage) { e.bodySecrets = extraSecrets(extra) }

// extraSecrets are the values of extra that RecordedExtra hides by their
// field's name, as text (a number as its digits); a value that is already
// redactedMark is shown as sent and hides nothing.
func extraSecrets(extra json.RawMessage) []string {
	var v any
	if decodeNumbers(extra, &v) != nil {
		return nil
	}
	var out []string
	hideSecrets(v, nil, func(sent any) {
		t, ok := sent.(string)
		if !ok {
			b, _ := json.Marshal(sent)
			t = string(b)
		} else if t == redactedMark {
			return
		}
		out = append(out, t)
	})
	return out
}

// decodeNumbers reads b as JSON into v, numbers with their digits.
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
