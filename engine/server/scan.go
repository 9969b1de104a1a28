package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// maxStopTokenIDs bounds stop_token_ids: real requests name a few EOS ids,
// and the presets' vocabularies hold 320 and 512 ids.
const maxStopTokenIDs = 1024

// errNotIntList is scanIDs' answer to anything but a JSON array of integers.
var errNotIntList = errors.New("not a list of integers")

// scanIDs reads a JSON array of integers without first decoding it into
// values: it keeps at most limit of them and only counts the rest, so a
// body of millions of ids costs no more memory than the limit. A value
// beyond int64 reads as math.MaxInt64 (or MinInt64), which no vocabulary
// holds. raw is one JSON value, as encoding/json hands it over.
func scanIDs(raw []byte, limit int) (ids []int64, count int, err error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, 0, errNotIntList
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return nil, 0, nil
	}
	ids = make([]int64, 0, min(limit, len(raw)/2+1))
	for {
		start := i
		if i < len(raw) && raw[i] == '-' {
			i++
		}
		digits := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		if i == digits {
			return nil, 0, errNotIntList
		}
		if count < limit {
			v, perr := strconv.ParseInt(string(raw[start:i]), 10, 64)
			if perr != nil { // out of range: a digit string, so only too large
				v = math.MaxInt64
				if raw[start] == '-' {
					v = math.MinInt64
				}
			}
			ids = append(ids, v)
		}
		count++
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, 0, errNotIntList
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
			continue
		case ']':
			if skipSpace(raw, i+1) != len(raw) {
				return nil, 0, errNotIntList
			}
			return ids, count, nil
		}
		return nil, 0, errNotIntList // a fraction, an exponent, or another type
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stopTokenIDs is stop_token_ids, refused while it is decoded when it holds
// more than maxStopTokenIDs ids (a 30 MB list was accepted before).
type stopTokenIDs []int64

func (l *stopTokenIDs) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*l = nil
		return nil
	}
	ids, n, err := scanIDs(b, maxStopTokenIDs)
	switch {
	case err != nil:
		return badRequest("stop_token_ids", "Invalid type for `stop_token_ids`: expected an array of integers.")
	case n > maxStopTokenIDs:
		return badRequest("stop_token_ids", "stop_token_ids takes at most %d ids, got %d.", maxStopTokenIDs, n)
	}
	*l = ids
	return nil
}

// listPrefix decodes the first elements of the JSON array raw into each,
// one at a time, and reports whether more than max elements follow, so a
// list far too long is refused without being decoded whole.
func listPrefix(raw []byte, max int, each func(json.RawMessage) bool) (tooMany, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return false, false
	}
	for n := 0; dec.More(); n++ {
		if n == max {
			return true, true
		}
		var el json.RawMessage
		if dec.Decode(&el) != nil || !each(el) {
			return false, false
		}
	}
	return false, true
}
