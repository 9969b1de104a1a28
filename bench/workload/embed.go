package workload

import (
	"embed"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

//go:embed examples/*.yaml samples/*
var files embed.FS

// embeddedPrefix starts a phase path naming a sample shipped in the binary.
const embeddedPrefix = "embedded:"

// embedded maps a sample's name (path: embedded:NAME) to its file. The
// samples were written for glmbench: a ShareGPT-shaped file of short
// conversations and a 60-second trace in mooncake's shape.
var embedded = map[string]string{
	"sharegpt": "samples/sharegpt.json",
	"trace":    "samples/trace.jsonl",
}

// Names lists the embedded example workloads, sorted: one per kind, each
// small enough to run in well under a minute against a slow CPU engine.
func Names() []string {
	ents, _ := fs.ReadDir(files, "examples")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Named returns the embedded example workload name, parsed afresh (the
// caller may change it), and whether there is one. Its Source is
// "embedded NAME".
func Named(name string) (*File, bool) {
	if strings.ContainsAny(name, "/.") {
		return nil, false
	}
	data, err := files.ReadFile("examples/" + name + ".yaml")
	if err != nil {
		return nil, false
	}
	f, err := Parse("embedded "+name, data, "")
	if err != nil {
		// The examples are checked by the package's tests.
		panic("workload: embedded example " + name + ": " + err.Error())
	}
	return f, true
}

// OpenData opens a phase's data file: an embedded sample for
// "embedded:NAME", else the file at path, taken from dir when relative
// and dir is not "". Errors are bad input naming the path.
func OpenData(path, dir string) (io.ReadCloser, error) {
	if name, ok := strings.CutPrefix(path, embeddedPrefix); ok {
		f, ok := embedded[name]
		if !ok {
			names := make([]string, 0, len(embedded))
			for n := range embedded {
				names = append(names, embeddedPrefix+n)
			}
			slices.Sort(names)
			return nil, badinput.Errorf("%s: no such embedded sample (there are %s)", path, strings.Join(names, ", "))
		}
		return files.Open(f)
	}
	if dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, badinput.Errorf("%s: %s", path, err)
	}
	return f, nil
}
