package endpointstest

import (
	"net/http"
	"time"
)

// ProfileCall is one call of a profiler route a personality answered.
type ProfileCall struct {
	// Route is "POST /start_profile" or "POST /stop_profile" (GET on SGLang).
	Route string
	At    time.Time
	// Generations is how many generation requests (POST
	// /v1/chat/completions or /v1/completions) had arrived before it.
	Generations int
}

// profileRoute says whether path is a profiler route this personality
// serves: SGLang always (python/sglang/srt/entrypoints/http_server.py);
// vLLM only with Options.VLLMProfiler, as its router is attached only
// when the server runs with a profiler configured
// (vllm/entrypoints/serve/profile/api_router.py); llama.cpp, OpenAI and
// the gateway have none (their 404).
func (p *Personality) profileRoute(path string) bool {
	if path != "/start_profile" && path != "/stop_profile" {
		return false
	}
	return p.Kind == SGLang || p.Kind == VLLM && p.Opts.VLLMProfiler
}

// sglangAdmin is SGLang's check of a route marked ADMIN_OPTIONAL (its
// profiler's) when it runs with --admin-api-key: only that key opens it,
// its --api-key does not, and a refusal is 401 {"error": "Unauthorized"}
// (python/sglang/srt/utils/auth.py, decide_request_auth). Its other
// routes take --api-key alone, or are open without one.
func (p *Personality) sglangAdmin(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") == "Bearer "+p.Opts.AdminAPIKey {
		return true
	}
	writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized"})
	return false
}

// profile answers a profiler route and records the call.
func (p *Personality) profile(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && (p.Kind == VLLM || r.Method != http.MethodGet) {
		// FastAPI's answer to a method the route lacks: vLLM's take POST,
		// SGLang's GET or POST.
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "Method Not Allowed"})
		return
	}
	p.mu.Lock()
	p.profiles = append(p.profiles, ProfileCall{Route: r.Method + " " + r.URL.Path, At: time.Now(), Generations: len(p.fields)})
	p.mu.Unlock()
	if p.Kind == VLLM {
		// vLLM answers Response(status_code=200): no body.
		w.WriteHeader(http.StatusOK)
		return
	}
	// SGLang's plain-text answers.
	msg := "Start profiling.\n"
	if r.URL.Path == "/stop_profile" {
		msg = "Stop profiling. This will take some time.\n"
	}
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(msg))
}

// ProfileCalls are the profiler calls answered, in order of arrival.
func (p *Personality) ProfileCalls() []ProfileCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProfileCall(nil), p.profiles...)
}

// Generations is how many generation requests arrived (POST
// /v1/chat/completions or /v1/completions), probes included.
func (p *Personality) Generations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fields)
}
