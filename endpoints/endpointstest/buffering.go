package endpointstest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A reverse proxy that buffers the answers it forwards, as nginx does with
// proxy_buffering on, its default (ngx_http_proxy_module: with buffering
// on, nginx reads the upstream's answer into its proxy_buffers, by default
// 8 buffers of one memory page, 4 KiB or 8 KiB, and passes the client a
// buffer at a time, not each piece as it comes), or as a gateway that holds
// the whole answer until it has ended (AWS API Gateway's REST integration,
// some corporate proxies). An SSE stream behind it reaches the client in
// blocks of many events, or all at once: the client's TTFT becomes the
// time to fill a block (or the whole answer), its ITL mostly 0. An
// upstream answer with "X-Accel-Buffering: no" is forwarded unbuffered,
// each piece as it arrives, as nginx does unless proxy_ignore_headers
// names the header; nginx passes no X-Accel-* header on to the client
// (proxy_hide_header's default), nor does this proxy.

// BufferAll is the Block of a proxy that forwards an answer whole, once it
// has ended.
const BufferAll = 0

// Buffering is a buffering reverse proxy in front of an upstream server
// (a personality's URL, or the engine's). BaseURL ends in /v1 as the
// personalities' does; every path is forwarded as it came.
type Buffering struct {
	*httptest.Server
	// Block is the bytes forwarded at a time: the proxy writes (and
	// flushes) a block each time it holds Block bytes, and what is left
	// at the end of the answer; BufferAll writes the answer once, whole.
	Block int

	upstream string
	client   *http.Client

	// accelNo makes the proxy an upstream that says X-Accel-Buffering: no
	// (AccelNo): it forwards unbuffered and says so on every answer.
	accelNo bool

	mu      sync.Mutex
	answers []Forwarded
}

// Forwarded is the account of one answer the proxy forwarded: the sizes in
// bytes of each write of its body to the client, in order, and whether the
// upstream turned buffering off for it (X-Accel-Buffering: no).
type Forwarded struct {
	Path       string
	Writes     []int
	Unbuffered bool
}

// StartBuffering starts a buffering proxy in front of upstream (a base
// URL without /v1, such as a Personality's URL), closed when t ends.
func StartBuffering(t testing.TB, upstream string, block int) *Buffering {
	t.Helper()
	b := NewBuffering(upstream, block)
	t.Cleanup(b.Close)
	return b
}

// NewBuffering starts a buffering proxy in front of upstream; the caller
// closes it.
func NewBuffering(upstream string, block int) *Buffering {
	b := &Buffering{
		Block:    block,
		upstream: strings.TrimSuffix(upstream, "/"),
		// No transparent gzip: the bytes forwarded are the upstream's.
		client: &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	return b
}

// BaseURL is the API base to give a client.
func (b *Buffering) BaseURL() string { return b.URL + "/v1" }

// Close stops the proxy and its connections to the upstream.
func (b *Buffering) Close() {
	b.Server.Close()
	b.client.CloseIdleConnections()
}

// Answers returns the account of every answer forwarded so far, in the
// order they ended.
func (b *Buffering) Answers() []Forwarded {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Forwarded(nil), b.answers...)
}

// Blocks is the truth of a buffering proxy: how many writes an answer
// body of size bytes is forwarded in by a proxy of the given block size
// (BufferAll: one), so how many separate arrivals at most its client sees.
func Blocks(size, block int) int {
	if block <= 0 || size <= block {
		return 1
	}
	return (size + block - 1) / block
}

// hopHeaders are the headers a proxy does not pass on: the hop-by-hop
// ones (RFC 9110 section 7.6.1) and the length, which the proxy's own
// framing sets.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Content-Length"}

func (b *Buffering) serve(w http.ResponseWriter, r *http.Request) {
	// The request is read whole first, as nginx does by default
	// (proxy_request_buffering on): the server may close a request's body
	// once its handler answers, under a transport still sending it.
	reqBody, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, b.upstream+r.URL.RequestURI(), bytes.NewReader(reqBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := b.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	fw := Forwarded{Path: r.URL.Path, Unbuffered: b.accelNo || strings.EqualFold(resp.Header.Get("X-Accel-Buffering"), "no")}
	for k, vs := range resp.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Accel-") {
			continue
		}
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	if b.accelNo {
		w.Header().Set("X-Accel-Buffering", "no")
	}
	// nginx sends the status and headers once it has them; only the body
	// waits in its buffers.
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	send := func(p []byte) bool {
		if _, err := w.Write(p); err != nil {
			return false
		}
		fw.Writes = append(fw.Writes, len(p))
		return rc.Flush() == nil
	}
	b.forward(resp.Body, fw.Unbuffered, send)
	b.mu.Lock()
	b.answers = append(b.answers, fw)
	b.mu.Unlock()
}

// forward reads body to its end and sends it on: each piece as it comes
// when unbuffered, else a block whenever Block bytes are held (BufferAll:
// none), and what is held at the end.
func (b *Buffering) forward(body io.Reader, unbuffered bool, send func([]byte) bool) {
	var held []byte
	piece := make([]byte, 32<<10)
	for {
		n, err := body.Read(piece)
		held = append(held, piece[:n]...)
		switch {
		case unbuffered && len(held) > 0:
			if !send(held) {
				return
			}
			held = held[:0]
		case !unbuffered && b.Block > 0:
			for len(held) >= b.Block {
				if !send(held[:b.Block]) {
					return
				}
				held = held[b.Block:]
			}
		}
		if err != nil {
			break
		}
	}
	if len(held) > 0 {
		send(held)
	}
}

// AccelNo starts a pass-through proxy in front of upstream that forwards
// each piece as it comes and adds "X-Accel-Buffering: no" to every answer,
// as an upstream server that opts its streams out of nginx's buffering
// does; closed when t ends. Its URL is an upstream to give StartBuffering.
func AccelNo(t testing.TB, upstream string) *Buffering {
	t.Helper()
	b := NewBuffering(upstream, BufferAll)
	b.accelNo = true
	t.Cleanup(b.Close)
	return b
}
