package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Ready is the line --ready-file gets once the server accepts requests: one
// JSON object and a newline, so that a script or glmbench selftest that
// started serve on --port 0 learns its address without reading the log.
type Ready struct {
	// BaseURL is the API base the server listens on, http://host:port/v1.
	BaseURL string `json:"base_url"`
	// Model is the id /v1/models lists.
	Model string `json:"model"`
}

// readyWriter writes the Ready line to stdout ("-") or to a file. A file is
// written under a temporary name in its folder and renamed into place, so a
// reader polling for the file never sees half a line, and removed when serve
// ends; the temporary file is made before the engine starts, so a bad path
// is bad input before any port is taken.
type readyWriter struct {
	out  io.Writer
	tmp  *os.File
	path string
	// placed is true once the file is in place.
	placed bool
}

func openReady(path string, stdout io.Writer) (*readyWriter, error) {
	if path == "-" {
		return &readyWriter{out: stdout}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	// CreateTemp makes the file private; a ready file is as readable as any other.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &readyWriter{out: tmp, tmp: tmp, path: path}, nil
}

// write puts r in place.
func (w *readyWriter) write(r Ready) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w.out, "%s\n", b); err != nil || w.tmp == nil {
		w.discard()
		return err
	}
	if err := w.tmp.Close(); err != nil {
		w.discard()
		return err
	}
	if err := os.Rename(w.tmp.Name(), w.path); err != nil {
		w.discard()
		return err
	}
	w.tmp, w.placed = nil, true
	return nil
}

// discard removes the temporary file, or the file once in place: a server
// that has stopped listens nowhere, so a stale file would send the next
// reader to a dead address.
func (w *readyWriter) discard() {
	if w.tmp != nil {
		w.tmp.Close()
		os.Remove(w.tmp.Name())
		w.tmp = nil
	} else if w.placed {
		os.Remove(w.path)
		w.placed = false
	}
}
