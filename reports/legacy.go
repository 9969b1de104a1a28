package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// legacyRow is one row of the older harness: exactly the first fifteen
// fields of schema.PhaseResult, so later fields of a row are never trusted.
type legacyRow struct {
	Phase      *string        `json:"phase"`
	BatchSize  int            `json:"batch_size"`
	InputLen   int            `json:"input_len"`
	OutputLen  int            `json:"output_len"`
	Completed  int            `json:"completed"`
	Errors     int            `json:"errors"`
	WallSec    float64        `json:"wall_sec"`
	LatMed     *float64       `json:"lat_med"`
	LatP99     *float64       `json:"lat_p99"`
	TTFTMed    *float64       `json:"ttft_med"`
	TTFTP99    *float64       `json:"ttft_p99"`
	TPOTMed    *float64       `json:"tpot_med"`
	InTput     float64        `json:"in_tput"`
	OutTput    float64        `json:"out_tput"`
	ErrorKinds map[string]int `json:"error_kinds"`
}

// LegacyTool is the tool name given to reports imported from the older harness.
const LegacyTool = "legacy harness (imported)"

// ParseLegacy reads the older harness's JSON list of rows as a report
// labelled by the file name without its extension. Error classes come from
// the error_kinds message prefixes (ClassifyLegacy); errors that no message
// accounts for are counted as unclassified, so the classes always sum to
// errors. Python writes NaN and Infinity for empty samples; they are read as
// null.
func ParseLegacy(path string, data []byte) (*schema.Report, error) {
	var rows []json.RawMessage
	clean, toOld := nanToNull(data)
	if err := json.Unmarshal(clean, &rows); err != nil {
		return nil, jsonErr(path, data, err, toOld)
	}
	if len(rows) == 0 {
		return nil, badinput.Errorf("%s: an empty list holds no phase", path)
	}
	name := filepath.Base(path)
	r := &schema.Report{
		Schema: schema.ReportSchema,
		Tool:   schema.Tool{Name: LegacyTool},
		Label:  strings.TrimSuffix(name, filepath.Ext(name)),
		Phases: make([]schema.PhaseResult, 0, len(rows)),
	}
	seen := map[string]bool{}
	for i, raw := range rows {
		var row legacyRow
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, badinput.Errorf("%s: row %d: %v", path, i+1, err)
		}
		switch {
		case row.Phase == nil || *row.Phase == "":
			return nil, badinput.Errorf("%s: row %d has no phase", path, i+1)
		case seen[*row.Phase]:
			return nil, badinput.Errorf("%s: phase %q appears twice", path, *row.Phase)
		case row.BatchSize < 0 || row.Completed < 0 || row.Errors < 0:
			return nil, badinput.Errorf("%s: phase %q has a negative count", path, *row.Phase)
		}
		seen[*row.Phase] = true
		ph := schema.PhaseResult{
			Phase: *row.Phase, BatchSize: row.BatchSize, InputLen: row.InputLen, OutputLen: row.OutputLen,
			Completed: row.Completed, Errors: row.Errors, WallSec: row.WallSec,
			LatMed: row.LatMed, LatP99: row.LatP99, TTFTMed: row.TTFTMed, TTFTP99: row.TTFTP99, TPOTMed: row.TPOTMed,
			InTput: &row.InTput, OutTput: row.OutTput, ErrorKinds: row.ErrorKinds,
			ByClass: map[schema.Class]int{}, Status: schema.StatusComplete,
		}
		if ph.ErrorKinds == nil {
			ph.ErrorKinds = map[string]int{}
		}
		counted := 0
		for _, k := range sortedKeys(ph.ErrorKinds) {
			n := ph.ErrorKinds[k]
			if n <= 0 {
				continue
			}
			ph.ByClass[ClassifyLegacy(k)] += n
			counted += n
		}
		if counted < ph.Errors {
			ph.ByClass[schema.Unclassified] += ph.Errors - counted
		}
		if ph.BatchSize > 0 {
			ph.ErrorRate = float64(ph.Errors) / float64(ph.BatchSize)
		}
		r.Phases = append(r.Phases, ph)
	}
	return r, nil
}

// ClassifyLegacy gives an older harness's error message its class by prefix.
// Its messages were "HTTP <status>: <body>" or the Python exception's name.
func ClassifyLegacy(msg string) schema.Class {
	msg = strings.TrimSpace(msg)
	switch {
	case strings.HasPrefix(msg, "HTTP 429"):
		return schema.RateLimited
	case strings.HasPrefix(msg, "HTTP 503"), strings.HasPrefix(msg, "HTTP 529"):
		return schema.QueueFull
	case strings.HasPrefix(msg, "HTTP 5"):
		return schema.HTTP5xx
	case strings.HasPrefix(msg, "HTTP 4"):
		return schema.HTTP4xx
	case strings.HasPrefix(msg, "ReadTimeout"):
		// httpx's ReadTimeout: no bytes within the read timeout mid-stream, a hang.
		return schema.Stalled
	}
	return schema.Unclassified
}

// nanToNull replaces the bare NaN, Infinity and -Infinity that Python's json
// module writes with null, leaving strings untouched. Each NaN grows by one
// byte; toOld maps an offset in the result back to one in b, so JSON errors
// still point into the file as written.
func nanToNull(b []byte) (out []byte, toOld func(int64) int64) {
	identity := func(o int64) int64 { return o }
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b, identity
	}
	// grown holds the offsets in out just past each NaN's "null".
	var grown []int64
	out = make([]byte, 0, len(b)+16)
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			inStr = true
		}
		tok := ""
		for _, t := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(t)) {
				tok = t
				break
			}
		}
		if tok == "" {
			out = append(out, c)
			continue
		}
		out = append(out, "null"...)
		// Pad the longer tokens to their own length; NaN is one byte short.
		for range len(tok) - 4 {
			out = append(out, ' ')
		}
		if len(tok) < 4 {
			grown = append(grown, int64(len(out)))
		}
		i += len(tok) - 1
	}
	return out, func(o int64) int64 {
		n := int64(0)
		for _, g := range grown {
			if g <= o {
				n++
			}
		}
		return o - n
	}
}

// jsonErr names the file and, for syntax and type errors, the line and column.
// toOld, if given, maps the error's offset back into data.
func jsonErr(path string, data []byte, err error, toOld ...func(int64) int64) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return badinput.Errorf("%s: malformed JSON: %v", path, err)
	}
	for _, f := range toOld {
		off = f(off)
	}
	// Offset counts the bytes read, the offending one included.
	line, col := lineCol(data, off-1)
	return badinput.Errorf("%s:%d:%d: malformed JSON: %v", path, line, col, err)
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
