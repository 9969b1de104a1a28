package endpoints

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// How the client reads answers that are not what the route promises: a
// 200 to a stream request that is no event stream, an HTML page (a
// proxy's error page, a login portal) where JSON was due.

// pageWindow is how many bytes of an HTML answer are read for its title:
// Cloudflare's error pages put theirs some 350 bytes in, past a record's
// BodyLimit.
const pageWindow = 4 << 10

// notStreamLimit bounds the body read of a 200 answer to a stream request
// that is no event stream: enough for a whole non-streamed completion's
// usage, never a body without end.
const notStreamLimit = 1 << 20

// refusalWindow is how many bytes of a refusal's body to read: the
// client's window, or pageWindow for an HTML page, for its title.
func refusalWindow(resp *http.Response, window int) int64 {
	if mediaType(resp) == "text/html" {
		return int64(max(window, pageWindow))
	}
	return int64(window)
}

// pageDetail is ": " and summary.HTMLPage's words for b, "" when b is no
// HTML page: a refusal's detail names the page, not only its status.
func pageDetail(b []byte) string {
	if msg, ok := summary.HTMLPage(b); ok {
		return ": " + msg
	}
	return ""
}

// mediaType is resp's Content-Type without parameters, lower case; "" when
// it has none or it does not parse.
func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// sseFields are the field names an event stream's first line may start with.
var sseFields = []string{"data", "event", "id", "retry", "error"}

// looksLikeEvents reports whether b, the first bytes of a body, may be an
// event stream: nothing yet, a comment, or a line starting with a field
// name (or a prefix of one, the rest not yet come). JSON, HTML and prose
// are not.
func looksLikeEvents(b []byte) bool {
	b = bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF")), " \t\r\n")
	if len(b) == 0 || b[0] == ':' {
		return true
	}
	for _, f := range sseFields {
		n := min(len(b), len(f))
		if string(b[:n]) != f[:n] {
			continue
		}
		if len(b) <= len(f) || b[len(f)] == ':' || b[len(f)] == '\r' || b[len(f)] == '\n' {
			return true
		}
	}
	return false
}

// bodyReader reads r and closes c: a body whose first bytes were read
// ahead.
type bodyReader struct {
	io.Reader
	io.Closer
}

// notEventStream settles a 200 answer to a stream request that is no event
// stream, and reports whether it did. Every server glmbench knows labels
// its stream text/event-stream, which is read as it comes; any other
// label (or none) has its first bytes read ahead, and is read as a stream
// still where they may be one (a server that forgot the label). Else it
// is a stream_error whatever it holds, a JSON body (a whole completion:
// the endpoint ignores stream true; its usage, when sound, is kept), an
// HTML page (a login portal, a proxy's page: named by its title) or text.
func (s *Stream) notEventStream(resp *http.Response, res *StreamResult) bool {
	ct := mediaType(resp)
	if ct == "text/event-stream" {
		return false
	}
	first := make([]byte, 512)
	n, err := resp.Body.Read(first)
	first = first[:n]
	if looksLikeEvents(first) {
		rest := io.Reader(resp.Body)
		if err != nil {
			rest = &stickyErr{err}
		}
		resp.Body = bodyReader{io.MultiReader(bytes.NewReader(first), rest), resp.Body}
		return false
	}
	b := first
	if err == nil {
		more, _ := io.ReadAll(io.LimitReader(resp.Body, notStreamLimit-int64(n)))
		b = append(b, more...)
	}
	c := s.c
	res.End = time.Since(res.T0)
	res.Bytes = int64(len(b))
	res.Body = c.ep.ClipBody(b, len(b) >= notStreamLimit)
	res.Class = schema.StreamError
	label := text.OneLine(ct)
	if label == "" {
		label = "none"
	}
	res.Detail = fmt.Sprintf("not an event stream: %s (Content-Type: %s)", c.notStreamWhat(b, res), label)
	return true
}

// notStreamWhat words what a 200 that is no event stream held, keeping a
// JSON body's sound usage in res.
func (c *Client) notStreamWhat(b []byte, res *StreamResult) string {
	if msg, ok := summary.HTMLPage(b); ok {
		return msg
	}
	var ch Chunk
	if ParseChunk(b, &ch) != nil {
		if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return "a JSON body that does not parse"
		}
		return "text: " + text.Shown(strings.ToValidUTF8(string(b), "?"), 60)
	}
	if ch.Usage && ch.BadUsage == nil {
		res.Usage, res.PromptTokens, res.CompletionTokens, res.ReasoningTokens = true, ch.PromptTokens, ch.CompletionTokens, ch.ReasoningTokens
		if ch.CachedReported {
			res.CachedTokens, res.CachedReported = ch.Cached, true
		}
	}
	switch {
	case ch.Error:
		return "a JSON error: " + text.Shown(summary.ErrorMessage(b), 120)
	case ch.Choices > 0:
		return "a whole JSON completion (the endpoint ignores stream: true)"
	}
	return "a JSON body"
}

// stickyErr returns err on every Read.
type stickyErr struct{ err error }

func (e *stickyErr) Read([]byte) (int, error) { return 0, e.err }

// pageError is the UnreadableError of a 2xx answer that is an HTML page
// where the API's JSON was due, nil when b is no page.
func (c *Client) pageError(status int, b []byte) error {
	msg, ok := summary.HTMLPage(b)
	if !ok {
		return nil
	}
	return &UnreadableError{Status: status, Msg: c.ep.Redact(fmt.Sprintf("HTTP %d with an HTML page, not the API's JSON: %s; something other than the API answered (a login portal, a proxy's page): is the URL the API's base?", status, msg))}
}

// pageAnswer reads ahead up to pageWindow bytes of a 2xx answer go-openai
// will decode: an HTML page there is a pageError, the body closed; any
// other answer is given back whole.
func (c *Client) pageAnswer(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, pageWindow))
	if perr := c.pageError(resp.StatusCode, b); perr != nil {
		resp.Body.Close()
		return perr
	}
	rest := io.Reader(resp.Body)
	if err != nil {
		rest = &stickyErr{err}
	}
	resp.Body = bodyReader{io.MultiReader(bytes.NewReader(b), rest), resp.Body}
	return nil
}
