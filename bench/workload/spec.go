package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/internal/text"
)

// Load reads, checks and returns the workload file at path (YAML or JSON).
// A phase's relative path is made relative to the file's directory. Every
// error is bad input in one line naming the file, and the phase and field
// where there is one.
func Load(path string) (*File, error) {
	data, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, filepath.Dir(path))
}

// maxSpecFile is the most bytes of a workload file read: the longest
// example is about 2 KiB, and a trace's requests are in its own file, so
// 16 MiB leaves room for any hand-written or generated file while /dev/zero
// or a data set given as --workload by mistake is refused, not read whole.
const maxSpecFile = 16 << 20

// readSpec reads path up to maxSpecFile, every error bad input naming it.
func readSpec(path string) ([]byte, error) {
	data, err := boundedfile.Read(path, maxSpecFile, "a workload file")
	var big *boundedfile.TooBigError
	switch {
	case errors.As(err, &big):
		return nil, badinput.Errorf("workload %s", big)
	case err != nil:
		return nil, badinput.Errorf("workload %s: %s", path, text.OneLine(errors.Unwrap(err).Error()))
	}
	return data, nil
}

// Parse reads and checks a workload file's bytes; source names it in
// errors and File.Source, and dir is the directory a phase's relative path
// is resolved against ("" leaves it as it is). A misspelt key is refused,
// not ignored.
func Parse(source string, data []byte, dir string) (*File, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, badinput.Errorf("%s: %s", source, text.OneLine(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), "json: ")))
	}
	var top struct {
		Phases []json.RawMessage `json:"phases"`
	}
	if err := strictDecode(js, &top); err != nil {
		return nil, badinput.Errorf("%s: %s", source, err)
	}
	if len(top.Phases) == 0 {
		return nil, badinput.Errorf("%s: no phases (want phases: [{name: ..., kind: ...}, ...])", source)
	}
	f := &File{Source: source}
	seen := map[string]bool{}
	for i, raw := range top.Phases {
		var p Phase
		if err := strictDecode(raw, &p); err != nil {
			return nil, badinput.Errorf("%s: %s: %s", source, phaseLabel(raw, i), err)
		}
		if err := p.validate(); err != nil {
			return nil, badinput.Errorf("%s: phase %q: %s", source, p.Name, err)
		}
		if seen[p.Name] {
			return nil, badinput.Errorf("%s: phase %q: name used twice", source, p.Name)
		}
		seen[p.Name] = true
		if p.Path != "" && dir != "" && !strings.HasPrefix(p.Path, embeddedPrefix) && !filepath.IsAbs(p.Path) {
			p.Path = filepath.Join(dir, p.Path)
		}
		f.Phases = append(f.Phases, p)
	}
	return f, nil
}

// strictDecode decodes one JSON value into v, refusing unknown keys and
// trailing data, with json's error said without its "json: " prefix.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the workload")
	}
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s: want %s, got %s", te.Field, typeName(te.Type.String()), te.Value)
	case errors.As(err, &te):
		return fmt.Errorf("want %s, got %s", typeName(te.Type.String()), te.Value)
	}
	return errors.New(jsonErrText(err))
}

// typeName says a Go type the way a YAML writer thinks of it.
func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "int") || t == "*int64":
		return "an integer"
	case strings.HasPrefix(t, "float") || t == "*float64":
		return "a number"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "struct") || strings.Contains(t, "workload."):
		return "a mapping"
	}
	return t
}

// phaseLabel names phase i in an error before it is decoded: by its name
// when that much can be read, else by its place (1-based).
func phaseLabel(raw json.RawMessage, i int) string {
	var n struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &n) == nil && n.Name != "" {
		return fmt.Sprintf("phase %q", n.Name)
	}
	return fmt.Sprintf("phase %d", i+1)
}

// UnmarshalJSON reads a Go duration string ("500ms", "2s") or a number of
// seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want 500ms, 2s or a number of seconds", s)
		}
		*d = Duration(v)
		return nil
	}
	var sec float64
	if err := json.Unmarshal(b, &sec); err != nil || math.IsNaN(sec) || math.Abs(sec) > maxSeconds {
		return fmt.Errorf("duration %s: want 500ms, 2s or a number of seconds", b)
	}
	*d = Duration(Seconds(sec))
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// String is the duration as Go writes it ("100ms").
func (d Duration) String() string { return time.Duration(d).String() }

// Std is the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// maxSeconds is the longest time.Duration, in seconds.
const maxSeconds = float64(math.MaxInt64) / 1e9

// Seconds converts seconds to a Duration, saturating instead of
// overflowing (a tiny rate's gaps, a huge time scale): a float64 past
// int64's range converts to whatever the machine gives (math.MinInt64 on
// amd64, a send time before the phase's start). NaN is no time at all:
// the longest too, a send that never comes rather than one at once.
func Seconds(s float64) time.Duration {
	switch {
	case s >= maxSeconds || math.IsNaN(s):
		return math.MaxInt64
	case s <= -maxSeconds:
		return math.MinInt64
	}
	return time.Duration(s * 1e9)
}
