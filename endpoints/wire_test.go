package endpoints

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/reports/schema"
)

// streamFrom is the StreamResult of one chat stream against handler, for
// the hostile endpoint (a key and an X-Team header to keep secret).
func streamFrom(t *testing.T, handler http.HandlerFunc) *StreamResult {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	return stream(t, hostileEndpoint(srv.URL), StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second})
}

// The SSE framing's own errors end a stream as an error event, classed
// by the code or type of their data when it is JSON: llama.cpp before PR
// 16109 (b5966 among them) writes "error: {...}" then data: [DONE]; an
// event of type error (OpenAI's Assistants stream, Anthropic) may carry
// any data. A byte order mark before the first event is skipped.
func TestTheSSEFramingsErrorsAreErrorEvents(t *testing.T) {
	for name, tc := range map[string]struct {
		after      string
		class      schema.Class
		detail     string
		body       string
		eventCount int
	}{
		"llama.cpp's error line for a prompt past the context": {
			after: `error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}` + "\n\ndata: [DONE]\n\n",
			class: schema.StreamError, detail: "error event with code 400 inside a 200 stream", body: "exceeds the available context size", eventCount: 1},
		"llama.cpp's error line while its model loads": {
			after: `error: {"code":503,"message":"Loading model","type":"unavailable_error"}` + "\n\n",
			class: schema.QueueFull, detail: "error event with code 503 inside a 200 stream", body: "Loading model", eventCount: 1},
		"an event of type error whose data is not JSON": {
			after: "event: error\ndata: upstream timed out\n\n",
			class: schema.StreamError, detail: "error event inside a 200 stream", body: "upstream timed out", eventCount: 1},
	} {
		t.Run(name, func(t *testing.T) {
			res := streamFrom(t, func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				io.WriteString(w, contentEvent+tc.after)
			})
			if res.Class != tc.class || res.Detail != tc.detail || !strings.Contains(string(res.Body), tc.body) {
				t.Fatalf("class %q detail %q body %q; want %q, %q, a body with %q", res.Class, res.Detail, res.Body, tc.class, tc.detail, tc.body)
			}
			if len(res.Events) != tc.eventCount || res.Malformed != 0 {
				t.Fatalf("%d events, %d malformed; want %d and none malformed", len(res.Events), res.Malformed, tc.eventCount)
			}
		})
	}
	res := streamFrom(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		io.WriteString(w, "\xEF\xBB\xBF"+contentEvent+"data: [DONE]\n\n")
	})
	if res.Class != "" || !res.Done || len(res.Events) != 1 {
		t.Fatalf("a stream after a byte order mark: class %q done %v, %d events", res.Class, res.Done, len(res.Events))
	}
}

// A 200 to a stream request that is not an event stream is the
// endpoint's fault, stream_error, said with what it was; a whole
// completion's usage is kept. A stream labelled wrongly (or not at all)
// is still read as one.
func TestA200ThatIsNoEventStreamIsAStreamError(t *testing.T) {
	completion := `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
	answer := func(ctype, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ctype == "" {
				w.Header()["Content-Type"] = nil // no label, and none sniffed
			} else {
				w.Header().Set("Content-Type", ctype)
			}
			io.WriteString(w, body)
		}
	}
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want []string
	}{
		"a whole completion: stream true ignored": {answer("application/json", completion),
			[]string{"not an event stream: a whole JSON completion (the endpoint ignores stream: true) (Content-Type: application/json)"}},
		"a JSON error with a 200": {answer("application/json; charset=utf-8", `{"error":{"message":"model overloaded","type":"server_error"}}`),
			[]string{"a JSON error: model overloaded", "(Content-Type: application/json)"}},
		"a login portal's page": {answer("text/html; charset=UTF-8", "<!DOCTYPE html><html><head><title>Sign in &middot; Corp SSO</title><script>x()</script></head><body>…</body></html>"),
			[]string{"not an event stream: Sign in · Corp SSO (an HTML page) (Content-Type: text/html)"}},
		"plain text without a label": {answer("", "Internal Server Error"),
			[]string{"not an event stream: text: Internal Server Error (Content-Type: none)"}},
		"text without end": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for block := []byte(strings.Repeat("x", 32<<10)); r.Context().Err() == nil; {
				if _, err := w.Write(block); err != nil {
					return
				}
			}
		}, []string{"not an event stream: text: xxxx", "(Content-Type: text/plain)"}},
	} {
		t.Run(name, func(t *testing.T) {
			res := streamFrom(t, tc.h)
			if res.Class != schema.StreamError || res.Status != 200 {
				t.Fatalf("class %q status %d (%s); want stream_error with the 200", res.Class, res.Status, res.Detail)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Detail, w) {
					t.Errorf("detail %q; want %q in it", res.Detail, w)
				}
			}
			if strings.Contains(res.Detail, "<") || len(res.Body) > BodyLimit || res.Bytes > notStreamLimit+512 {
				t.Errorf("detail %q, a %d-byte body kept, %d bytes read: want no markup and bounds kept", res.Detail, len(res.Body), res.Bytes)
			}
		})
	}
	res := streamFrom(t, answer("application/json", completion))
	if !res.Usage || res.PromptTokens != 5 || res.CompletionTokens != 1 {
		t.Errorf("the completion's usage: %v %d/%d; want 5 prompt, 1 completion", res.Usage, res.PromptTokens, res.CompletionTokens)
	}
	for _, ctype := range []string{"text/plain; charset=utf-8", "application/octet-stream", ""} {
		res := streamFrom(t, answer(ctype, ": ping\n\n"+contentEvent+"data: [DONE]\n\n"))
		if res.Class != "" || !res.Done || len(res.Events) != 1 {
			t.Errorf("an event stream labelled %q: class %q (%s), %d events; want it read as a stream", ctype, res.Class, res.Detail, len(res.Events))
		}
	}
}

// cloudflare502 is the start of Cloudflare's 5xx page as quoted in public
// reports: its title comes some 350 bytes in, past a record's 200.
const cloudflare502 = "<!DOCTYPE html>\n" +
	`<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if IE 7]>    <html class="no-js ie7 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if IE 8]>    <html class="no-js ie8 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->` + "\n" +
	"<head>\n\n<title>api.example.com | 502: Bad gateway</title>\n"

// A proxy's HTML refusal is named by its title in the detail, never its
// markup; a title that quotes a secret is redacted.
func TestAnHTMLRefusalIsNamedByItsTitle(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		page   string
		want   string
	}{
		"nginx's 502":            {502, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n", "HTTP 502: 502 Bad Gateway (an HTML page)"},
		"Cloudflare's 502":       {502, cloudflare502 + strings.Repeat("<style>.x{}</style>", 200), "HTTP 502: api.example.com | 502: Bad gateway (an HTML page)"},
		"a page quoting the key": {401, "<html><head><title>Bad token Bearer " + hostileKey + "</title></head></html>", "HTTP 401: Bad token Bearer *** (an HTML page)"},
	} {
		t.Run(name, func(t *testing.T) {
			res := streamFrom(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.page)
			})
			if res.Class != ClassifyStatus(tc.status) || !strings.HasPrefix(res.Detail, tc.want) {
				t.Fatalf("class %q detail %q; want %q", res.Class, res.Detail, tc.want)
			}
			if l := leaks(res.Detail + string(res.Body)); len(l) > 0 || len(res.Body) > BodyLimit {
				t.Fatalf("leaks %v, a %d-byte body", l, len(res.Body))
			}
		})
	}
}

// A 2xx HTML page where the API's JSON was due (a login portal in front
// of the API) is an UnreadableError naming the page, from Post and from
// ListModels alike; a JSON answer still reads.
func TestA2xxHTMLPageIsUnreadableForPostAndListModels(t *testing.T) {
	page := true
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if page {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<!doctype html><html><head><title>Sign in to continue</title></head><body>"+strings.Repeat("<p>.</p>", 2000)+"</body></html>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]}`)
	}))
	defer srv.Close()
	c := NewClient(hostileEndpoint(srv.URL), NewTransport(TransportOptions{}))
	const want = "HTTP 200 with an HTML page, not the API's JSON: Sign in to continue (an HTML page)"
	_, perr := c.Post(context.Background(), "/chat/completions", []byte(`{}`))
	_, lerr := c.ListModels(context.Background())
	for what, err := range map[string]error{"Post": perr, "ListModels": lerr} {
		var ue *UnreadableError
		if !errors.As(err, &ue) || ue.Status != 200 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an UnreadableError saying %q", what, err, want)
		}
		if status, ok := Answered(err); !ok || status != 200 {
			t.Errorf("%s: Answered = %d, %v; want the 200 answered", what, status, ok)
		}
	}
	mu.Lock()
	page = false
	mu.Unlock()
	if ids, err := c.ListModels(context.Background()); err != nil || len(ids) != 1 || ids[0] != "m" {
		t.Errorf("ListModels of JSON: %v, %v", ids, err)
	}
}
