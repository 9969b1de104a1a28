package workload

import (
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// Open is what --workload and --dataset name: spec is a workload file or
// the name of a built-in example (Names), and dataset, when given, the data
// set its dataset phases read instead of their own path. Alone, dataset is
// one dataset phase, "dataset", of all its items.
func Open(spec, dataset string) (*File, error) {
	var f *File
	switch named, ok := Named(spec); {
	case spec == "":
		f = &File{Phases: []Phase{{Name: "dataset", Kind: Dataset}}, Source: "--dataset"}
	case ok:
		f = named
	case !strings.ContainsAny(spec, "./\\"):
		return nil, badinput.Errorf("--workload %q: not a file path, and not a built-in workload (%s)", spec, strings.Join(Names(), ", "))
	default:
		var err error
		if f, err = Load(spec); err != nil {
			return nil, err
		}
	}
	if dataset == "" {
		return f, nil
	}
	n := 0
	for i := range f.Phases {
		if f.Phases[i].Kind == Dataset {
			f.Phases[i].Path, f.Phases[i].Format = dataset, ""
			n++
		}
	}
	if n == 0 {
		return nil, badinput.Errorf("--dataset: workload %s has no dataset phase to read it", f.Source)
	}
	return f, nil
}
