package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The chat template's tojson filter is Python's json.dumps(ensure_ascii=False):
// ", " and ": " separators, non-ASCII characters unescaped, and no HTML
// escaping. Go's encoding/json differs on all three, so the prompt would
// differ in length from the one SGLang or vLLM builds; these helpers write
// Python's form, keeping object keys in their given order.

// appendPyJSON appends the one JSON value in raw to dst in Python's style.
func appendPyJSON(dst []byte, raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dst, err := appendPyValue(dst, dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return dst, nil
}

func appendPyValue(dst []byte, dec *json.Decoder) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		open, close := byte(v), byte('}')
		if v == '[' {
			close = ']'
		}
		dst = append(dst, open)
		for first := true; dec.More(); first = false {
			if !first {
				dst = append(dst, ", "...)
			}
			if open == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				dst = appendPyString(dst, k.(string))
				dst = append(dst, ": "...)
			}
			if dst, err = appendPyValue(dst, dec); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return append(dst, close), nil
	case string:
		return appendPyString(dst, v), nil
	case json.Number:
		return append(dst, v...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case nil:
		return append(dst, "null"...), nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// appendPyString appends s as a JSON string the way json.dumps with
// ensure_ascii=False writes it: only the quote, the backslash and control
// characters are escaped (\b \f \n \r \t, others as \u00xx). Invalid UTF-8,
// which a Python string cannot hold, becomes U+FFFD.
func appendPyString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, w := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && w == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+w]...)
			}
			i += w
			continue
		}
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			} else {
				dst = append(dst, c)
			}
		}
		i++
	}
	return append(dst, '"')
}
