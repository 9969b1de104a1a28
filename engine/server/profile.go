package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
)

// The profiler routes, as SGLang's (python/sglang/srt/entrypoints/
// http_server.py: GET or POST /start_profile and /stop_profile) and
// vLLM's (POST; 404 when its profiler is not configured), so that
// `glmbench run --profile` drives them as it drives theirs. The profile
// is the engine process's Go CPU profile (runtime/pprof), for `go tool
// pprof`. The directory is the server's own (Options.ProfileDir or
// SetProfileDir): a request's body is never read, so no client chooses
// where the server writes.

// profiler is the CPU profile being written, if any.
type profiler struct {
	mu   sync.Mutex
	dir  string
	file *os.File // nil: none running
	// out is what runtime/pprof writes to: file, keeping the first write
	// error, which pprof itself drops (a disk that filled up during the
	// profile would otherwise give a cut profile called written).
	out *firstErrWriter
}

// profileSink is what a profile's bytes go through on their way to its
// file: the file itself; a test makes the writes fail.
var profileSink = func(f *os.File) io.Writer { return f }

// firstErrWriter writes to w and keeps the first error a write returned;
// after it, writes are dropped and fail with it.
type firstErrWriter struct {
	w   io.Writer
	err error
}

func (e *firstErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// SetProfileDir turns the profiler routes on, writing to dir ("" turns
// them off: 404). It may be called while serving (glmbench run sets its
// report folder once that is named); a profile already running keeps its
// file.
func (s *Server) SetProfileDir(dir string) {
	s.prof.mu.Lock()
	defer s.prof.mu.Unlock()
	s.prof.dir = dir
}

// profileAnswer is the 200 body of a profiler route.
type profileAnswer struct {
	Message string `json:"message"`
	// File is the profile's path: the server's directory joined with its
	// name, glmbench-<UTC time>.pprof.
	File string `json:"file"`
}

func (s *Server) handleStartProfile(w http.ResponseWriter, r *http.Request) {
	p := &s.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == "" {
		writeError(w, profilerOff(r))
		return
	}
	if s.shuttingDown() {
		// Checked under p.mu: Shutdown marks the server closing before it
		// stops the profile (under p.mu too), so a start either comes
		// before that stop or sees the mark; none outlives the server.
		writeError(w, unavailable(msgShuttingDown))
		return
	}
	if p.file != nil {
		writeError(w, conflict("A profile is already being written to %s; POST /stop_profile first.", p.file.Name()))
		return
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "Cannot create the profile directory: " + err.Error()})
		return
	}
	name := filepath.Join(p.dir, "glmbench-"+s.opts.Now().UTC().Format("20060102T150405.000000000Z")+".pprof")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "Cannot create the profile: " + err.Error()})
		return
	}
	out := &firstErrWriter{w: profileSink(f)}
	if err := pprof.StartCPUProfile(out); err != nil {
		// The process's CPU profiler is taken: GLMBENCH_CPUPROFILE, or
		// another profile of the same process.
		f.Close()
		os.Remove(name)
		writeError(w, conflict("The process's CPU profiler is already in use (%s); no profile was started.", err.Error()))
		return
	}
	p.file, p.out = f, out
	writeJSON(w, http.StatusOK, profileAnswer{Message: "Start profiling.", File: name})
}

func (s *Server) handleStopProfile(w http.ResponseWriter, r *http.Request) {
	name, err := s.prof.stop()
	switch {
	case errors.Is(err, errNoProfile) && s.profileOff():
		writeError(w, profilerOff(r))
	case errors.Is(err, errNoProfile):
		writeError(w, badRequest("", "No profile is running; POST /start_profile first."))
	case err != nil:
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "Writing the profile: " + err.Error()})
	default:
		writeJSON(w, http.StatusOK, profileAnswer{Message: "Profile written.", File: name})
	}
}

// profilerOff is the 404 of a profiler route with no directory set.
func profilerOff(r *http.Request) *apiError {
	return notFound("Route %s %s not found: the profiler is off (start the server with a profile directory, glmbench serve --profile-dir DIR).", r.Method, r.URL.Path)
}

func (s *Server) profileOff() bool {
	s.prof.mu.Lock()
	defer s.prof.mu.Unlock()
	return s.prof.dir == ""
}

var errNoProfile = errors.New("no profile running")

// stop ends the running profile, if any, and returns its file's path.
func (p *profiler) stop() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		return "", errNoProfile
	}
	pprof.StopCPUProfile() // flushes to p.out before it returns
	name, err := p.file.Name(), p.file.Close()
	if p.out.err != nil {
		err = p.out.err
	}
	p.file, p.out = nil, nil
	return name, err
}

// conflict is a 409: the request clashes with the server's state.
func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Type: "ConflictError", Message: fmt.Sprintf(format, args...)}
}
