package threshold

import (
	"encoding/json"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/internal/text"
)

// ParseFile reads thresholds from YAML (or JSON) in one of three shapes:
//
//	# a list of expressions
//	- decode_medium.out_tput > -5%
//	- "*.error_rate <= 0.01"
//
//	# the same list under "thresholds"
//	thresholds:
//	  - single.tpot_med < 0.015
//
//	# k6's shape: selector → condition or list of conditions
//	thresholds:
//	  decode_medium.out_tput: ["> -5%", "> 1000"]
//	  "*.error_rate": "<= 0.01"
//
// Selectors of the map shape are taken in sorted order, since YAML maps have
// none, so a gate's lines come out the same on every run.
func ParseFile(data []byte) ([]Threshold, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w file: %s", ErrSyntax, text.OneLine(err.Error()))
	}
	var top any
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%w file: %s", ErrSyntax, err)
	}
	if m, ok := top.(map[string]any); ok {
		th, ok := m["thresholds"]
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("%w file: want a list of expressions or one key, thresholds", ErrSyntax)
		}
		top = th
	}
	var exprs []string
	switch v := top.(type) {
	case nil:
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%w file: entry %d is not a string expression", ErrSyntax, i+1)
			}
			exprs = append(exprs, s)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, sel := range keys {
			conds, ok := v[sel].([]any)
			if !ok {
				conds = []any{v[sel]}
			}
			for _, c := range conds {
				s, ok := c.(string)
				if !ok {
					return nil, fmt.Errorf("%w file: %s: conditions must be strings such as \"> -5%%\"", ErrSyntax, sel)
				}
				exprs = append(exprs, sel+" "+s)
			}
		}
	default:
		return nil, fmt.Errorf("%w file: want a list of expressions or a thresholds key", ErrSyntax)
	}
	return ParseAll(exprs)
}

// ReadFile reads and parses a threshold file; errors name the file.
func ReadFile(path string) ([]Threshold, error) {
	b, err := boundedfile.Read(path, maxThresholdFile, "a threshold file")
	if err != nil {
		return nil, err
	}
	ts, err := ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// maxThresholdFile is the most bytes of a threshold file read: a file of a
// thousand thresholds is under 64 KiB, so 16 MiB refuses only /dev/zero or a
// report given by mistake, which would otherwise be read whole.
const maxThresholdFile = 16 << 20
