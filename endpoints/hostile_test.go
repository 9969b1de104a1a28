package endpoints

// The hostile endpoint suite: servers that misbehave the ways issue 12 saw
// (and a few more), each answered by the client in bounded time and memory
// with one class and a plain detail. These tests are not parallel: each
// measures the bytes the process allocated while it ran (runtime.MemStats
// TotalAlloc, server and client together, an upper bound on the peak heap).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/endpoints/sse"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// The two secrets a hostile server echoes: the API key (with a '/', which
// JSON may write as \/) and a --header value.
const (
	hostileKey    = "sk-hostile/0123456789abcdefghijklmn"
	hostileHeader = "team-Secret-ABCDEFGH-987654"
)

func hostileEndpoint(url string) *Endpoint {
	return &Endpoint{BaseURL: url + "/v1", Model: "m", apiKey: hostileKey, headers: []header{{name: "X-Team", value: hostileHeader}}}
}

// leaks lists every 8-character piece of a secret found in s, in any
// letter case: a secret must not show whole, nor by a prefix.
func leaks(s string) []string {
	var out []string
	low := strings.ToLower(s)
	for _, sec := range []string{hostileKey, hostileHeader} {
		sec = strings.ToLower(sec)
		for i := 0; i+8 <= len(sec); i++ {
			if strings.Contains(low, sec[i:i+8]) {
				out = append(out, sec[i:i+8])
				break
			}
		}
	}
	return out
}

// bounded runs f and fails the test when the process allocated more than
// limit bytes meanwhile.
func bounded(t *testing.T, limit uint64, f func()) {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	d := b.TotalAlloc - a.TotalAlloc
	t.Logf("allocated %.1f MiB meanwhile (server and client); heap in use %.1f → %.1f MiB",
		float64(d)/(1<<20), float64(a.HeapInuse)/(1<<20), float64(b.HeapInuse)/(1<<20))
	if d > limit {
		t.Errorf("allocated %.1f MiB, over the %.0f MiB bound", float64(d)/(1<<20), float64(limit)/(1<<20))
	}
}

// stream sends one streaming request to ep and returns what the client made
// of it. A request the client does not end itself within 30 s fails the test.
func stream(t *testing.T, ep *Endpoint, lim StreamLimits) *StreamResult {
	t.Helper()
	tr := NewTransport(TransportOptions{Conns: 1, ConnectTimeout: 2 * time.Second})
	defer tr.Close()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, fmt.Errorf("the client did not end the request itself"))
	defer cancel()
	res := &StreamResult{}
	NewClient(ep, tr).StreamAPI(ctx, APIChat, []byte(`{"model":"m","stream":true}`), lim, nil, res)
	if res.Cancelled != nil {
		t.Fatalf("%v (class %q, %d events)", res.Cancelled, res.Class, len(res.Events))
	}
	t.Logf("class %q, status %d, %d events, %d bytes: %s", res.Class, res.Status, len(res.Events), res.Bytes, res.Detail)
	return res
}

const contentEvent = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":null}]}\n\n"

// sseHeaders starts a 200 event stream as SGLang and vLLM do.
func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// A server that ignores max_tokens is ended at AnswerBound (4×16+32 answer
// events for max_tokens 16); one that streams reasoning without end, at
// EventBound (16×16+65536 content events), the margin left for reasoning
// some providers do not count in max_tokens.
func TestHostileEndlessContentEventsEndAtTheRunawayBound(t *testing.T) {
	const reasoningEvent = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"x\"},\"finish_reason\":null}]}\n\n"
	for _, tc := range []struct {
		name, event, detail string
		bound               int
	}{
		{"answer content", contentEvent, "97 answer events for max_tokens 16 (the bound is 96", AnswerBound(16)},
		{"reasoning", reasoningEvent, "65793 content events for max_tokens 16 (the bound is 65792", EventBound(16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := []byte(strings.Repeat(tc.event, 64))
			srv := endpointstest.Endless(t, "", block)
			var res *StreamResult
			bounded(t, 64<<20, func() {
				res = stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second, MaxTokens: 16})
			})
			if res.Class != schema.StreamError || len(res.Events) != tc.bound {
				t.Fatalf("class %q with %d events kept, want stream_error at %d", res.Class, len(res.Events), tc.bound)
			}
			if !strings.Contains(res.Detail, tc.detail) {
				t.Fatalf("detail %q does not name the counts (%q)", res.Detail, tc.detail)
			}
		})
	}
	if AnswerBound(16) != 4*16+32 || EventBound(16) != 16*16+65536 {
		t.Fatalf("bounds %d, %d", AnswerBound(16), EventBound(16))
	}
}

// Streams far longer than max_tokens that are sound are not runaways: a
// gateway that splits each token over three events, and a hosted reasoning
// model whose thinking max_tokens does not count (DeepSeek's reasoner:
// max_tokens bounds the answer after the reasoning). Both end with a finish
// reason and usage, and both complete with their usage used.
func TestLongSoundStreamsAreNotRunaways(t *testing.T) {
	for _, tc := range []struct {
		name               string
		events, completion int
		delta              string
	}{
		{"three events per token", 3 * 256, 256, `{"content":"x"}`},
		{"8,000 reasoning events before 256 tokens of answer", 8000 + 256, 8000 + 256, `{"reasoning_content":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				for range tc.events {
					fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", tc.delta)
				}
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
				fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", tc.completion)
			}))
			defer srv.Close()
			res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, MaxTokens: 256})
			if res.Class != "" || len(res.Events) != tc.events || !res.Usage || res.CompletionTokens != tc.completion || res.BadUsage != "" {
				t.Fatalf("class %q (%s), %d events, usage %v %d, note %q: want a completed stream of %d events with usage %d",
					res.Class, res.Detail, len(res.Events), res.Usage, res.CompletionTokens, res.BadUsage, tc.events, tc.completion)
			}
		})
	}
}

// endlessReader is a stream of content events that never ends.
type endlessReader struct{ block []byte }

func (e endlessReader) Read(p []byte) (int, error) {
	n := 0
	for n+len(e.block) <= len(p) {
		n += copy(p[n:], e.block)
	}
	if n == 0 {
		n = copy(p, e.block[:len(p)])
	}
	return n, nil
}

func TestHostileEndlessStreamKeepsBoundedEventsWithoutMaxTokens(t *testing.T) {
	// 7.5 M timestamps per request were kept before; now at most MaxEvents.
	var res StreamResult
	bounded(t, 64<<20, func() {
		rd := sse.NewReader(endlessReader{[]byte(contentEvent)})
		_, over := readEvents(rd, &res, nil, false, 0, nil, nil)
		if !over {
			t.Fatal("an endless stream ended by itself")
		}
	})
	if res.Class != schema.StreamError || len(res.Events) != MaxEvents {
		t.Fatalf("class %q with %d events kept, want stream_error at %d", res.Class, len(res.Events), MaxEvents)
	}
}

func TestHostileEndlessBytesAfterTheFirstEventEndAtTheByteBound(t *testing.T) {
	// Keep-alive comments forever: bytes arrive, so the stall timer never fires.
	block := []byte(strings.Repeat(": keep-alive\n", 512))
	srv := endpointstest.Endless(t, contentEvent, block)
	var res *StreamResult
	bounded(t, 64<<20, func() {
		res = stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second, MaxTokens: 16})
	})
	if res.Class != schema.StreamError || !strings.Contains(res.Detail, fmt.Sprintf("more than %d bytes", BodyBound(16))) {
		t.Fatalf("class %q detail %q, want stream_error past %d bytes", res.Class, res.Detail, BodyBound(16))
	}
}

func TestHostileEndlessBodyWithoutEventsIsATTFTTimeout(t *testing.T) {
	// Lines that are no SSE field, forever: no content event ever comes.
	block := []byte(strings.Repeat("garbage\n", 512))
	srv := endpointstest.Endless(t, "", block)
	var res *StreamResult
	bounded(t, 256<<20, func() {
		res = stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 300 * time.Millisecond, Stall: 10 * time.Second})
	})
	if res.Class != schema.TTFTTimeout || !strings.Contains(res.Detail, "though bytes arrived, none of them a content event") {
		t.Fatalf("class %q detail %q, want ttft_timeout saying bytes came", res.Class, res.Detail)
	}
}

func TestHostileHugeLineIsAStreamErrorNamingTheBound(t *testing.T) {
	// One data line longer than the client reads (a 200 MB line was called
	// "no content event" before); sent endlessly, without a line end.
	block := bytes.Repeat([]byte("a"), 64<<10)
	srv := endpointstest.Endless(t, "data: {\"choices\":[{\"delta\":{\"content\":\"", block)
	var res *StreamResult
	bounded(t, 96<<20, func() {
		res = stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 20 * time.Second})
	})
	if res.Class != schema.StreamError || !strings.Contains(res.Detail, fmt.Sprintf("SSE line longer than %d bytes", MaxLine)) {
		t.Fatalf("class %q detail %q, want stream_error naming the %d-byte bound", res.Class, res.Detail, MaxLine)
	}
	if len(res.Body) > BodyLimit {
		t.Fatalf("kept %d bytes of body", len(res.Body))
	}
}

func TestHostileSilentServersAreTimeouts(t *testing.T) {
	t.Run("accepts and never answers", func(t *testing.T) {
		res := stream(t, hostileEndpoint("http://"+endpointstest.Silent(t)), StreamLimits{TTFT: 300 * time.Millisecond})
		if res.Class != schema.TTFTTimeout || res.Status != 0 {
			t.Fatalf("class %q status %d, want ttft_timeout with no status", res.Class, res.Status)
		}
	})
	t.Run("answers headers then nothing", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			<-r.Context().Done()
		}))
		defer srv.Close()
		res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 300 * time.Millisecond})
		if res.Class != schema.TTFTTimeout || res.Status != 200 {
			t.Fatalf("class %q status %d, want ttft_timeout after a 200", res.Class, res.Status)
		}
	})
	t.Run("one event then nothing", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			io.WriteString(w, contentEvent)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		defer srv.Close()
		res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, Stall: 300 * time.Millisecond})
		if res.Class != schema.Stalled || len(res.Events) != 1 {
			t.Fatalf("class %q with %d events, want stalled after 1", res.Class, len(res.Events))
		}
	})
}

func TestHostileUsageThatIsNoCountIsNotUsed(t *testing.T) {
	for _, tc := range []struct{ name, usage, note string }{
		{"negative", `{"prompt_tokens":8,"completion_tokens":-5}`, "completion_tokens -5"},
		{"1e18 prompt tokens", `{"prompt_tokens":1e18,"completion_tokens":3}`, "prompt_tokens 1e18"},
		{"a fraction", `{"prompt_tokens":8,"completion_tokens":2.5}`, "completion_tokens 2.5"},
		{"a string", `{"prompt_tokens":8,"completion_tokens":"3"}`, `completion_tokens "3"`},
		{"missing", `{"prompt_tokens":8}`, "without completion_tokens"},
		{"zero beside content", `{"prompt_tokens":8,"completion_tokens":0}`, "is 0 beside 3 content events"},
		{"far past max_tokens", `{"prompt_tokens":8,"completion_tokens":100000}`, "100000 is past 65792, the runaway bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, strings.Repeat(contentEvent, 3))
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":%s}\n\ndata: [DONE]\n\n", tc.usage)
			}))
			defer srv.Close()
			res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, MaxTokens: 16})
			if res.Class != "" || res.Usage || res.CompletionTokens != 0 || !strings.Contains(res.BadUsage, tc.note) {
				t.Fatalf("class %q usage %v (%d/%d) note %q, want a completed request whose usage is dropped with a note naming %q",
					res.Class, res.Usage, res.PromptTokens, res.CompletionTokens, res.BadUsage, tc.note)
			}
			if tc.name == "1e18 prompt tokens" && res.PromptTokens != 0 {
				t.Fatalf("prompt tokens %d from 1e18", res.PromptTokens)
			}
		})
	}
	t.Run("a sound count is used", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sseHeaders(w)
			io.WriteString(w, strings.Repeat(contentEvent, 3))
			io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
		}))
		defer srv.Close()
		res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, MaxTokens: 16})
		if !res.Usage || res.PromptTokens != 8 || res.CompletionTokens != 3 || res.BadUsage != "" {
			t.Fatalf("usage %v %d/%d note %q", res.Usage, res.PromptTokens, res.CompletionTokens, res.BadUsage)
		}
	})
}

func TestHostileMalformedDataLinesAreCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		io.WriteString(w, contentEvent)
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}\n\n")          // not JSON: a brace short
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n") // not UTF-8
		io.WriteString(w, "data:\n\n")                                                        // empty: no event at all
		io.WriteString(w, contentEvent)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	res := stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second})
	if res.Class != "" || res.Malformed != 2 || len(res.Events) != 2 {
		t.Fatalf("class %q, %d malformed, %d events; want completed with 2 malformed and 2 content events", res.Class, res.Malformed, len(res.Events))
	}
}

func TestHostileCompressedBodyIsNamed(t *testing.T) {
	var askedFor atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		askedFor.Store(r.Header.Get("Accept-Encoding"))
		// A proxy that compresses whatever it is asked.
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/event-stream")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, contentEvent+"data: [DONE]\n\n")
		zw.Close()
	}))
	defer srv.Close()
	ep := hostileEndpoint(srv.URL)
	res := stream(t, ep, StreamLimits{TTFT: 10 * time.Second})
	if res.Class != schema.StreamError || !strings.Contains(res.Detail, "gzip-compressed body") {
		t.Fatalf("class %q detail %q, want stream_error naming the gzip body", res.Class, res.Detail)
	}
	if askedFor.Load() != "identity" {
		t.Fatalf("the request said Accept-Encoding %q, want identity", askedFor.Load())
	}
	_, err := NewClient(ep, NewTransport(TransportOptions{})).Post(context.Background(), "/chat/completions", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "gzip-compressed body") {
		t.Fatalf("Post: %v", err)
	}
}

func TestHostileOversizedHeaderIsSaidPlainly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Huge", strings.Repeat("h", MaxHeaderBytes+1024))
		sseHeaders(w)
	}))
	defer srv.Close()
	var res *StreamResult
	bounded(t, 32<<20, func() {
		res = stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second})
	})
	if res.Class != schema.Connect || !strings.Contains(res.Detail, "response headers are larger than the client accepts") {
		t.Fatalf("class %q detail %q", res.Class, res.Detail)
	}
}

func TestHostileRedirectsAreNeverFollowed(t *testing.T) {
	var other atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		sseHeaders(w)
		io.WriteString(w, contentEvent+"data: [DONE]\n\n")
	}))
	defer elsewhere.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/v1/chat/completions?token=path-secret", code)
			}))
			defer srv.Close()
			ep := hostileEndpoint(srv.URL)
			res := stream(t, ep, StreamLimits{TTFT: 10 * time.Second})
			if res.Class != schema.Redirect || res.Status != code || !strings.Contains(res.Detail, elsewhere.URL+",") {
				t.Fatalf("class %q status %d detail %q, want redirect naming %s", res.Class, res.Status, res.Detail, elsewhere.URL)
			}
			if strings.Contains(res.Detail, "path-secret") || strings.Contains(string(res.Body), "path-secret") {
				t.Fatalf("the Location's path or query was kept: %q %q", res.Detail, res.Body)
			}
			c := NewClient(ep, NewTransport(TransportOptions{}))
			_, err := c.Post(context.Background(), "/chat/completions", []byte(`{}`))
			var re *RedirectError
			if !errors.As(err, &re) || re.Status != code || re.Origin != elsewhere.URL {
				t.Fatalf("Post: %v", err)
			}
			if _, err := c.ListModels(context.Background()); !errors.As(err, &re) {
				t.Fatalf("ListModels: %v", err)
			}
		})
	}
	if n := other.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

func TestHostileEchoedSecretsAreRedactedEverywhere(t *testing.T) {
	// The key starts at byte 190 of the 500 body (10 of its bytes before the cut), straddling the 200-byte cut.
	pad := `{"error":{"message":"`
	pad += strings.Repeat("p", 190-len(pad)-len("Bearer "))
	body500 := pad + "Bearer " + hostileKey + ` for team ` + strings.ToUpper(hostileHeader) + `","type":"server_error"}}` + strings.Repeat(" ", 600)
	if i := strings.Index(body500, hostileKey); i != 190 {
		t.Fatalf("key at %d", i)
	}
	// In the error event: \/-escaped, \u-escaped, percent-encoded.
	escKey := strings.ReplaceAll(hostileKey, "/", `\/`)
	uHeader := `\u0074` + hostileHeader[1:]
	event := `data: {"error":{"message":"auth ` + escKey + ` team ` + uHeader + ` url key=` + strings.ReplaceAll(hostileKey, "/", "%2F") + `","code":401}}` + "\n\n"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, r.Header.Get("Authorization"))
			return
		case "/server_info", "/get_server_info":
			fmt.Fprintf(w, `{"api_key":%q,"tp_size":1}`, hostileKey)
			return
		}
		if n.Add(1)%2 == 1 {
			w.WriteHeader(500)
			io.WriteString(w, body500)
			return
		}
		sseHeaders(w)
		io.WriteString(w, contentEvent+event)
	}))
	defer srv.Close()
	ep := hostileEndpoint(srv.URL)
	for _, want := range []schema.Class{schema.HTTP5xx, schema.StreamError} {
		res := stream(t, ep, StreamLimits{TTFT: 10 * time.Second})
		if res.Class != want {
			t.Fatalf("class %q, want %q", res.Class, want)
		}
		if l := leaks(string(res.Body) + " " + res.Detail + " " + summary.ErrorMessage(res.Body)); l != nil {
			t.Fatalf("%s leaks %v: body %q detail %q", want, l, res.Body, res.Detail)
		}
		if !strings.Contains(string(res.Body), redactedMark) {
			t.Fatalf("no redaction mark in %q", res.Body)
		}
	}
	c := NewClient(ep, NewTransport(TransportOptions{}))
	resp, err := c.Post(context.Background(), "/chat/completions", []byte(`{}`))
	if err != nil || resp.Status != 500 || leaks(string(resp.Body)) != nil {
		t.Fatalf("Post: %v, leaks %v", err, leaks(string(resp.Body)))
	}
	if _, err := c.ListModels(context.Background()); err == nil || leaks(err.Error()) != nil {
		t.Fatalf("ListModels error %v leaks", err)
	}
	info, err := c.ServerInfo(context.Background())
	if err != nil || leaks(fmt.Sprint(info)) != nil {
		t.Fatalf("server info %v (%v) leaks", info, err)
	}
}

func TestClipBodyRedactsASecretCutOffAtTheEnd(t *testing.T) {
	ep := hostileEndpoint("http://x")
	// Ten whole keys shrink to marks, which pulls the cut-off start of the
	// eleventh under the 200-byte cut.
	b := []byte(strings.Repeat(hostileKey+" ", 10) + strings.Repeat("x", 100) + hostileKey[:12])
	got := ep.ClipBody(b, true)
	if l := leaks(string(got)); l != nil {
		t.Fatalf("%q leaks %v", got, l)
	}
	if !bytes.HasSuffix(got, []byte("x"+redactedMark)) {
		t.Fatalf("the cut-off tail was not marked: %q", got)
	}
	// A body that ends there is not cut: its tail is ordinary text.
	if got := ep.ClipBody([]byte("sk-"), false); string(got) != "sk-" {
		t.Fatalf("%q", got)
	}
}

func TestRedactFindsTheFormsAServerWritesASecretIn(t *testing.T) {
	ep := hostileEndpoint("http://x")
	ep.headers = append(ep.headers, header{name: "Authorization-Extra", value: "Token abcdefgh12345678"})
	for _, in := range []string{
		hostileKey,
		strings.ToUpper(hostileKey),
		strings.ReplaceAll(hostileKey, "/", `\/`),
		strings.ReplaceAll(hostileKey, "/", `\\\/`), // JSON inside JSON
		strings.ReplaceAll(hostileKey, "/", "%2f"),
		`\u0073\u006B` + hostileKey[2:],
		"abcdefgh12345678", // the token of a scheme-prefixed header value, alone
	} {
		got := ep.Redact("said: " + in + ".")
		if got != "said: ***." {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
	pct := &Endpoint{apiKey: "key%41with\\marks"}
	if got := pct.Redact(`a key%41with\\marks b`); got != "a *** b" {
		t.Errorf("a secret holding %% and \\ itself: %q", got)
	}
	if got := ep.Redact("nothing secret here"); got != "nothing secret here" {
		t.Errorf("changed %q", got)
	}
}

// FuzzRedactLeavesNoSecret: whatever surrounds a secret, in whichever of
// the forms a server writes it, the redacted text holds no secret as it
// is, in any letter case, nor once JSON-unescaped.
func FuzzRedactLeavesNoSecret(f *testing.F) {
	f.Add([]byte("pre "), []byte(" post"), uint8(0))
	f.Add([]byte(`{"error":{"message":"`), []byte(`"}}`), uint8(1))
	f.Add([]byte("sk-hos"), []byte("tile/0123"), uint8(2))
	f.Add([]byte(`\`), []byte(`\u0073`), uint8(3))
	ep := hostileEndpoint("http://x")
	forms := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.ReplaceAll(s, "/", `\/`) },
		strings.ToUpper,
		func(s string) string { return `\u00` + fmt.Sprintf("%x", s[0]) + s[1:] },
		func(s string) string { return strings.ReplaceAll(s, "-", "%2D") },
	}
	f.Fuzz(func(t *testing.T, pre, post []byte, form uint8) {
		for _, sec := range []string{hostileKey, hostileHeader} {
			in := string(pre) + forms[int(form)%len(forms)](sec) + string(post)
			out := ep.Redact(in)
			low := strings.ToLower(out)
			for _, s := range []string{hostileKey, hostileHeader} {
				if strings.Contains(low, strings.ToLower(s)) {
					t.Fatalf("Redact(%q) = %q holds %q", in, out, s)
				}
			}
			var dec string
			if json.Unmarshal([]byte(`"`+out+`"`), &dec) == nil && strings.Contains(strings.ToLower(dec), strings.ToLower(sec)) {
				t.Fatalf("Redact(%q) = %q holds %q once unescaped", in, out, sec)
			}
		}
	})
}

func TestRedactLeavesNumbersAndAnswersWhole(t *testing.T) {
	ep := &Endpoint{apiKey: hostileKey, headers: []header{{name: "X-Tenant", value: "1234"}, {name: "X-Cache", value: "true"}}}
	for in, want := range map[string]string{
		"tenant 1234 refused":           "tenant *** refused",
		`{"logprob":-0.12345,"n":1234}`: `{"logprob":-0.12345,"n":***}`,
		"id 91234 and 12340":            "id 91234 and 12340",
	} {
		if got := ep.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	// A 2xx answer keeps short values that are JSON's own words; a long
	// secret echoed in it is still redacted.
	answer := `{"choices":[{"text":"ok","logprobs":null}],"cached":true,"echo":"` + hostileKey + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, answer) }))
	defer srv.Close()
	ep.BaseURL = srv.URL + "/v1"
	resp, err := NewClient(ep, NewTransport(TransportOptions{})).Post(context.Background(), "/completions", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(answer, hostileKey, redactedMark)
	if string(resp.Body) != want {
		t.Fatalf("200 body %s, want %s", resp.Body, want)
	}
	// A numeric header value of 8+ digits equal to a number in a 2xx answer
	// (an org id equal to a "created" stamp) is left there: *** in its place
	// would make the answer invalid JSON for the eval or probe parsing it.
	const stamped = `{"created":17330000,"choices":[]}`
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, stamped) }))
	defer srv2.Close()
	num := &Endpoint{BaseURL: srv2.URL + "/v1", headers: []header{{name: "X-Org-Id", value: "17330000"}}}
	resp, err = NewClient(num, NewTransport(TransportOptions{})).Post(context.Background(), "/completions", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(resp.Body) || string(resp.Body) != stamped {
		t.Fatalf("200 body %s, want it whole and valid JSON", resp.Body)
	}
}
