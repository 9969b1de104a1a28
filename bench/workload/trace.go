package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
)

// traceLine is one line of a trace in the mooncake shape; other keys
// (hash_ids, ...) are ignored.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
}

// traceEntry is one request of a trace: its offset from the first
// request, in the trace's unit and scaled, and its lengths.
type traceEntry struct {
	At            time.Duration
	Input, Output int
	Line          int
}

// loadTrace streams a JSONL trace of {"timestamp", "input_length",
// "output_length"} lines (blank lines skipped) and stops after need
// entries (0: all). Timestamps must not decrease; offsets are from the
// first line's, in unit (one unit in seconds: 1e-3 for ms) times scale.
func loadTrace(r io.Reader, name string, need int, unit, scale float64) ([]traceEntry, error) {
	var out []traceEntry
	first := 0.0
	prev := math.Inf(-1)
	err := lines(skipBOM(r), name, func(b []byte, n int) (bool, error) {
		if len(bytes.TrimSpace(b)) == 0 {
			return false, nil
		}
		bad := func(format string, args ...any) (bool, error) {
			return true, badinput.Errorf("%s:%d: "+format, append([]any{name, n}, args...)...)
		}
		var l traceLine
		if err := json.Unmarshal(b, &l); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return bad("%s: want %s, got %s", te.Field, typeName(te.Type.String()), te.Value)
			}
			return bad(`want {"timestamp": ..., "input_length": ..., "output_length": ...}: %s`, jsonErrText(err))
		}
		switch {
		case l.Timestamp == nil:
			return bad("timestamp: required")
		case l.InputLength == nil:
			return bad("input_length: required")
		case l.OutputLength == nil:
			return bad("output_length: required")
		case math.IsInf(*l.Timestamp, 0) || math.Abs(*l.Timestamp) > 1e15:
			return bad("timestamp %g: out of range", *l.Timestamp)
		case *l.Timestamp < prev:
			return bad("timestamp %g: before the previous line's %g (want them in order)", *l.Timestamp, prev)
		case *l.InputLength < 1 || *l.InputLength > MaxTokens:
			return bad("input_length %d: want 1 to %d", *l.InputLength, MaxTokens)
		case *l.OutputLength < 1 || *l.OutputLength > MaxTokens:
			return bad("output_length %d: want 1 to %d", *l.OutputLength, MaxTokens)
		}
		if len(out) == 0 {
			first = *l.Timestamp
		}
		prev = *l.Timestamp
		out = append(out, traceEntry{
			At:    Seconds((*l.Timestamp - first) * unit * scale),
			Input: *l.InputLength, Output: *l.OutputLength, Line: n,
		})
		return need > 0 && len(out) == need, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
