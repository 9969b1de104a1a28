// Package endpointstest provides a fake OpenAI-compatible chat server for
// tests: it streams /v1/chat/completions and /v1/completions like SGLang or vLLM, fails in any of the ways real
// endpoints fail, on purpose and per request, and records when it sent every
// content event, so a client's timings can be checked against the server's.
package endpointstest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is what the server understood of one chat or completions request.
type Request struct {
	// Path is the route it came on: "/v1/chat/completions" or "/v1/completions".
	Path string
	// Messages is how many chat messages the body had, Prompt whether it
	// had a "prompt" (a completions body): Content is then the prompt.
	Messages  int
	Prompt    bool
	Nonce     string
	I         int // the <i:06d> of the prompt prefix, -1 when none
	MaxTokens int
	Stream    bool
	Usage     bool // stream_options.include_usage
	IgnoreEOS bool
	Content   string
}

// Fail says how a request fails. The zero value succeeds.
type Fail int

// Failure modes.
const (
	OK Fail = iota
	// Status answers with Behavior.Status, Behavior.Body and Behavior.RetryAfter.
	Status
	// Reset closes the connection before any response.
	Reset
	// Hang never answers (until the client goes away).
	Hang
	// Stall stops sending (keeping the connection open) after FailAfter content events.
	Stall
	// ErrorEvent sends an error event with ErrorCode after FailAfter content events, then [DONE].
	ErrorEvent
	// Truncate ends the stream after FailAfter content events with neither finish reason nor [DONE].
	Truncate
	// Empty answers 200 and ends the stream with no event at all.
	Empty
	// NoDone ends after a finish reason but without [DONE].
	NoDone
)

// UsageMode says where a stream carries usage.
type UsageMode int

const (
	// UsageFinal sends the include_usage chunk with empty choices (SGLang, vLLM, OpenAI).
	UsageFinal UsageMode = iota
	// UsageInFinish puts usage on the chunk that carries finish_reason.
	UsageInFinish
	// UsageNone sends no usage anywhere.
	UsageNone
)

// Behavior is how the server answers one request.
type Behavior struct {
	Fail       Fail
	Status     int
	Body       string
	RetryAfter string
	ErrorCode  int
	FailAfter  int
	// TTFT is the delay before the first content event.
	TTFT time.Duration
	// Gap is the delay between content events; Jitter adds up to ±Jitter at random.
	Gap, Jitter time.Duration
	// TokensPerEvent packs several tokens into each content event (spec decode, batching gateways).
	TokensPerEvent int
	Usage          UsageMode
	// Reasoning sends the text as reasoning_content (or, with ReasoningField set, that field).
	Reasoning      bool
	ReasoningField string
	// ReasoningTokens sends a chat stream's first ReasoningTokens tokens
	// as reasoning (in Reasoning's field), the rest as content, and counts
	// them in usage.completion_tokens_details.reasoning_tokens: a server
	// that streams its reasoning and reports it, as vLLM (PR 45802) and
	// LightLLM do.
	ReasoningTokens int
}

// Send is the server's record of one request: when it arrived and when each
// content event was written and flushed.
type Send struct {
	Req     Request
	Arrival time.Time
	Events  []time.Time
	Tokens  int
}

// Server is a running fake endpoint.
type Server struct {
	*httptest.Server
	// Behave decides each request's behaviour; nil means plain success.
	Behave func(Request) Behavior
	// PromptTokens counts a prompt's tokens; nil means 10 + ceil(len/4).
	PromptTokens func(content string) int
	// Models is what /v1/models lists; nil means ["fake-model"].
	Models []string
	// ModelsStatus, when set, answers /v1/models with that status.
	ModelsStatus int

	mu    sync.Mutex
	sends []*Send
}

// New starts a fake endpoint; its base URL is s.URL + "/v1". Each option
// configures the server before it starts (set fields there, not after).
func New(behave func(Request) Behavior, opts ...func(*Server)) *Server {
	s := &Server{Behave: behave}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/v1/completions", s.chat)
	mux.HandleFunc("/v1/models", s.models)
	s.Server = httptest.NewUnstartedServer(mux)
	for _, o := range opts {
		o(s)
	}
	s.Start()
	return s
}

// BaseURL is the API base to give a client.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Sends returns the server's records of the requests of one nonce, by index.
func (s *Server) Sends(nonce string) map[int]*Send {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]*Send{}
	for _, snd := range s.sends {
		if snd.Req.Nonce == nonce {
			c := *snd
			c.Events = append([]time.Time(nil), snd.Events...)
			out[snd.Req.I] = &c
		}
	}
	return out
}

// Count returns how many chat requests arrived, of any nonce.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sends)
}

// Nonces lists the nonces of the requests seen, in order of first arrival.
func (s *Server) Nonces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, snd := range s.sends {
		if !seen[snd.Req.Nonce] {
			seen[snd.Req.Nonce] = true
			out = append(out, snd.Req.Nonce)
		}
	}
	return out
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.ModelsStatus != 0 {
		w.WriteHeader(s.ModelsStatus)
		fmt.Fprintf(w, `{"error":{"message":"models says %d","type":"x","code":%d}}`, s.ModelsStatus, s.ModelsStatus)
		return
	}
	ids := s.Models
	if ids == nil {
		ids = []string{"fake-model"}
	}
	var data []string
	for _, id := range ids {
		data = append(data, fmt.Sprintf(`{"id":%q,"object":"model","created":0,"owned_by":"test"}`, id))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
}

func parse(r *http.Request) (Request, error) {
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		Prompt        *string `json:"prompt"`
		MaxTokens     int     `json:"max_tokens"`
		Stream        bool    `json:"stream"`
		IgnoreEOS     bool    `json:"ignore_eos"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return Request{}, err
	}
	req := Request{Path: r.URL.Path, MaxTokens: body.MaxTokens, Stream: body.Stream, IgnoreEOS: body.IgnoreEOS, I: -1, Messages: len(body.Messages)}
	req.Usage = body.StreamOptions != nil && body.StreamOptions.IncludeUsage
	switch {
	case len(body.Messages) > 0:
		req.Content = body.Messages[len(body.Messages)-1].Content
	case body.Prompt != nil:
		req.Content, req.Prompt = *body.Prompt, true
	}
	// "<nonce>-<i:06d> " starts the prompt.
	if head, _, ok := strings.Cut(req.Content, " "); ok {
		if nonce, idx, ok := strings.Cut(head, "-"); ok {
			if n, err := strconv.Atoi(idx); err == nil {
				req.Nonce, req.I = nonce, n
			}
		}
	}
	return req, nil
}

// chat answers /v1/chat/completions (and /v1/completions, in its own chunk
// shape) as Behave says for the request, and records its arrival and
// content events.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	req, err := parse(r)
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json","code":400}}`, 400)
		return
	}
	b := Behavior{}
	if s.Behave != nil {
		b = s.Behave(req)
	}
	snd := s.record(req, arrival)
	prompt := 10 + (len(req.Content)+3)/4
	if s.PromptTokens != nil {
		prompt = s.PromptTokens(req.Content)
	}
	if failBeforeAnswer(w, r, b) {
		return
	}
	n := max(req.MaxTokens, 1)
	text := r.URL.Path == "/v1/completions"
	if !req.Stream {
		writeWhole(w, b, prompt, n, text)
		return
	}
	st := &chatStream{s: s, w: w, r: r, rc: http.NewResponseController(w), b: b, snd: snd, prompt: prompt, text: text}
	st.run(arrival, n, req.Usage)
}

// record adds a request's Send, to which its content events are added as they go.
func (s *Server) record(req Request, arrival time.Time) *Send {
	snd := &Send{Req: req, Arrival: arrival}
	s.mu.Lock()
	s.sends = append(s.sends, snd)
	s.mu.Unlock()
	return snd
}

// failBeforeAnswer fails the request before any answer when b says so
// (Status, Reset, Hang); false when the request goes on to an answer.
func failBeforeAnswer(w http.ResponseWriter, r *http.Request, b Behavior) bool {
	switch b.Fail {
	case Status:
		if b.RetryAfter != "" {
			w.Header().Set("Retry-After", b.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(b.Status)
		io.WriteString(w, b.Body)
		return true
	case Reset:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	case Hang:
		<-r.Context().Done()
		return true
	}
	return false
}

// writeWhole answers a non-streaming request with n tokens of "a": a chat
// completion, or with text a text completion.
func writeWhole(w http.ResponseWriter, b Behavior, prompt, n int, text bool) {
	w.Header().Set("Content-Type", "application/json")
	if text {
		fmt.Fprintf(w, `{"id":"cmpl-x","object":"text_completion","choices":[{"index":0,"text":"%s","logprobs":null,"finish_reason":"length"}]`, strings.Repeat("a", n))
	} else {
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"length"}]`, strings.Repeat("a", n))
	}
	if b.Usage != UsageNone {
		fmt.Fprintf(w, `,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, n, prompt+n)
	}
	io.WriteString(w, "}")
}

// chatStream is one streamed answer in progress.
type chatStream struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	rc     *http.ResponseController
	b      Behavior
	snd    *Send
	prompt int    // usage.prompt_tokens
	sent   int    // content tokens sent so far
	text   bool   // a /v1/completions stream: choices[].text chunks
	rng    uint64 // the jitter's generator state
}

// run streams n tokens: the role chunk, the content events, then the finish,
// unless b makes the stream fail on the way.
func (st *chatStream) run(arrival time.Time, n int, includeUsage bool) {
	st.w.Header().Set("Content-Type", "text/event-stream")
	st.w.WriteHeader(200)
	if st.b.Fail == Empty {
		st.flush()
		return
	}
	if !st.text {
		// SGLang and vLLM open a chat stream with a role chunk that carries
		// no content; a completions stream has no roles.
		io.WriteString(st.w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
		st.flush()
	}
	if st.content(arrival, n) {
		st.finish(includeUsage)
	}
}

// flush sends what is written and returns when it was sent.
func (st *chatStream) flush() time.Time {
	_ = st.rc.Flush()
	return time.Now()
}

// sleep waits d; false when the client of r went away first.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// content sends the n tokens as content events, TokensPerEvent at a time,
// the first TTFT after arrival and each next one a gap after the last; false
// when the stream ended before the last (the client left or b failed it).
func (st *chatStream) content(arrival time.Time, n int) bool {
	b := st.b
	per := max(b.TokensPerEvent, 1)
	reasoningField := "reasoning_content"
	if b.ReasoningField != "" {
		reasoningField = b.ReasoningField
	}
	st.rng = uint64(arrival.UnixNano())
	next := arrival.Add(b.TTFT)
	events := 0
	for st.sent < n {
		if !sleep(st.r, time.Until(next)) {
			return false
		}
		if events == b.FailAfter && st.failMidStream() {
			return false
		}
		k := min(per, n-st.sent)
		text := strings.Repeat("tok ", k)
		if st.text {
			// vLLM's and SGLang's completions chunk (reasoning has no place in it).
			fmt.Fprintf(st.w, "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"created\":0,\"model\":\"fake-model\",\"choices\":[{\"index\":0,\"text\":%q,\"logprobs\":null,\"finish_reason\":null}]}\n\n", text)
		} else {
			field := "content"
			if b.Reasoning || st.sent < b.ReasoningTokens {
				field = reasoningField
			}
			fmt.Fprintf(st.w, "data: {\"choices\":[{\"index\":0,\"delta\":{%q:%q},\"finish_reason\":null}]}\n\n", field, text)
		}
		at := st.flush()
		st.sent += k
		events++
		st.s.mu.Lock()
		st.snd.Events = append(st.snd.Events, at)
		st.snd.Tokens = st.sent
		st.s.mu.Unlock()
		next = at.Add(st.gap())
	}
	return true
}

// failMidStream ends the stream as b.Fail says when it is a mid-stream
// failure (Stall, ErrorEvent, Truncate); false when it is none.
func (st *chatStream) failMidStream() bool {
	switch st.b.Fail {
	case Stall:
		<-st.r.Context().Done()
		return true
	case ErrorEvent:
		fmt.Fprintf(st.w, "data: {\"error\":{\"object\":\"error\",\"message\":\"injected failure\",\"type\":\"x\",\"param\":null,\"code\":%d}}\n\ndata: [DONE]\n\n", st.b.ErrorCode)
		st.flush()
		return true
	case Truncate:
		st.flush()
		return true
	}
	return false
}

// gap is the delay before the next content event: Gap, plus up to ±Jitter
// drawn from the stream's own generator.
func (st *chatStream) gap() time.Duration {
	gap := st.b.Gap
	if st.b.Jitter > 0 {
		st.rng = st.rng*6364136223846793005 + 1442695040888963407
		f := float64(st.rng>>11)/float64(1<<53)*2 - 1
		gap += time.Duration(math.Round(f * float64(st.b.Jitter)))
	}
	return gap
}

// finish ends a stream that sent all its content: the finish reason, usage
// where b.Usage puts it, and [DONE] unless b.Fail is NoDone.
func (st *chatStream) finish(includeUsage bool) {
	b := st.b
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, st.prompt, st.sent, st.prompt+st.sent)
	if b.ReasoningTokens > 0 && !st.text {
		usage = fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"completion_tokens_details":{"reasoning_tokens":%d}}`,
			st.prompt, st.sent, st.prompt+st.sent, min(b.ReasoningTokens, st.sent))
	}
	choice := `{"index":0,"delta":{},"finish_reason":"length"}`
	if st.text {
		choice = `{"index":0,"text":"","logprobs":null,"finish_reason":"length"}`
	}
	if b.Usage == UsageInFinish {
		fmt.Fprintf(st.w, "data: {\"choices\":[%s],\"usage\":%s}\n\n", choice, usage)
	} else {
		fmt.Fprintf(st.w, "data: {\"choices\":[%s]}\n\n", choice)
	}
	if b.Usage == UsageFinal && includeUsage {
		fmt.Fprintf(st.w, "data: {\"choices\":[],\"usage\":%s}\n\n", usage)
	}
	if b.Fail != NoDone {
		io.WriteString(st.w, "data: [DONE]\n\n")
	}
	st.flush()
}
