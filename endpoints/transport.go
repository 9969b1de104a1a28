package endpoints

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/glmbench/glmbench/internal/rxstamp"
)

// TransportOptions size the HTTP connection pool for one phase.
type TransportOptions struct {
	// Conns is the most requests in flight at once; the pool keeps that many
	// idle keep-alive connections so no request waits for a dial it need not.
	Conns int
	// ConnectTimeout bounds a dial plus TLS handshake.
	ConnectTimeout time.Duration
	// Trust verifies the server's TLS certificate: the endpoint's
	// (Endpoint.Trust), which NewClient checks; the zero Trust is the
	// system's roots.
	Trust Trust
}

// Transport is an HTTP/1.1 keep-alive transport that can open a phase's
// connections before the phase starts (Warm), so that a burst of hundreds of
// requests is sent at once instead of one dial after another: otherwise the
// client's own connection set-up shows up as send lag.
//
// HTTP/2 is off on purpose: one TCP connection per stream is what serving
// engines see from real clients, and it keeps one slow stream from holding up
// others' frames. Compression is off so bytes are timed as they arrive: with
// DisableCompression Go's transport neither asks for gzip nor undoes it, and
// the client says Accept-Encoding: identity itself, so a compressed answer
// is the endpoint's fault and named so.
type Transport struct {
	*http.Transport
	dialer  *net.Dialer
	timeout time.Duration
	// trust is opts.Trust, and tlsConfig its handshake's configuration.
	trust     Trust
	tlsConfig *tls.Config

	mu    sync.Mutex
	ready map[string][]net.Conn // warmed connections by "scheme|host:port"
}

// MaxHeaderBytes bounds a response's header block.
const MaxHeaderBytes = 1 << 20

// NewTransport returns a Transport sized for opts.
func NewTransport(opts TransportOptions) *Transport {
	conns := max(opts.Conns, 1)
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	t := &Transport{
		dialer:    &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second},
		timeout:   timeout,
		trust:     opts.Trust,
		tlsConfig: opts.Trust.Config(),
		ready:     map[string][]net.Conn{},
	}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	t.Transport = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           t.dial,
		DialTLSContext:        t.dialTLS,
		TLSHandshakeTimeout:   timeout,
		Protocols:             protos,
		MaxIdleConns:          conns + 8,
		MaxIdleConnsPerHost:   conns + 8,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: 0, // the TTFT timeout covers a server that never answers
		// No serving endpoint sends a megabyte of headers; Go's default
		// (10 MiB) would let each of a phase's connections hold that much.
		MaxResponseHeaderBytes: MaxHeaderBytes,
		WriteBufferSize:        4 << 10,
		ReadBufferSize:         4 << 10,
		// The handshake behind an http proxy (after CONNECT) is Go's own,
		// with this configuration (the server name its own): it verifies
		// as dialTLS's does.
		TLSClientConfig: t.tlsConfig,
	}
	return t
}

func (t *Transport) take(key string) net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.ready[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	t.ready[key] = cs[:len(cs)-1]
	return c
}

func (t *Transport) put(key string, c net.Conn) {
	t.mu.Lock()
	t.ready[key] = append(t.ready[key], c)
	t.mu.Unlock()
}

func (t *Transport) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := t.take("http|" + addr); c != nil {
		return c, nil
	}
	return t.dialTCP(ctx, network, addr)
}

// dialTCP dials addr; the connection's reads keep the kernel's receive
// stamps (rxstamp.Wrap), from which a stream's event times are taken.
func (t *Transport) dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return rxstamp.Wrap(c), nil
}

func (t *Transport) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := t.take("https|" + addr); c != nil {
		return c, nil
	}
	return t.handshake(ctx, network, addr)
}

// handshake dials addr and completes a TLS handshake that offers only
// HTTP/1.1, verifying the server's certificate as the transport's Trust says.
func (t *Transport) handshake(parent context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(parent, t.timeout)
	defer cancel()
	raw, err := t.dialTCP(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	cfg := t.tlsConfig.Clone()
	cfg.ServerName = host
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			// The limit is the handshake's own, not the caller's: say so,
			// rather than a bare "context deadline exceeded".
			return nil, fmt.Errorf("the TLS handshake got no answer within %s (--connect-timeout): %w", t.timeout, err)
		}
		return nil, err
	}
	return c, nil
}

// Warm opens up to n connections to baseURL's host ahead of use. It dials
// 64 at a time (Pool.Warm runs one per shard, so a pool dials up to 64 per
// shard at once) and gives up at ctx's end; a connection it could not open
// is simply dialled later by the request that needs it. Behind a proxy it
// does nothing.
func (t *Transport) Warm(ctx context.Context, baseURL string, n int) {
	u, err := url.Parse(baseURL)
	if err != nil || n <= 0 {
		return
	}
	if p, _ := t.Proxy(&http.Request{URL: u}); p != nil {
		return
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	key := u.Scheme + "|" + addr
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var c net.Conn
			var err error
			if u.Scheme == "https" {
				c, err = t.handshake(ctx, "tcp", addr)
			} else {
				c, err = t.dialTCP(ctx, "tcp", addr)
			}
			if err != nil {
				return
			}
			t.put(key, c)
		}()
	}
	wg.Wait()
}

// Close closes idle and unused warmed connections.
func (t *Transport) Close() {
	t.CloseIdleConnections()
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, cs := range t.ready {
		for _, c := range cs {
			c.Close()
		}
		delete(t.ready, k)
	}
}

// Pool spreads a phase's requests over several transports. One
// http.Transport serialises every request on its own locks (its idle-pool
// and per-host mutexes): measured here, a 512-request burst through one
// transport spent over 200 ms waiting on them, which showed up as send lag.
// Request i always uses shard i mod the shard count.
type Pool struct {
	ep      *Endpoint
	shards  []*Transport
	clients []*Client
}

// connsPerShard is about how many requests in flight share one transport.
const connsPerShard = 8

// NewPool returns a pool sized for opts.Conns requests in flight.
func NewPool(ep *Endpoint, opts TransportOptions) *Pool {
	conns := max(opts.Conns, 1)
	n := min(64, max(1, conns/connsPerShard))
	p := &Pool{ep: ep}
	per := (conns + n - 1) / n
	for range n {
		t := NewTransport(TransportOptions{Conns: per, ConnectTimeout: opts.ConnectTimeout, Trust: ep.Trust})
		p.shards = append(p.shards, t)
		p.clients = append(p.clients, NewClient(ep, t))
	}
	return p
}

// Client returns the client request i uses.
func (p *Pool) Client(i int) *Client { return p.clients[i%len(p.clients)] }

// Warm opens n connections ahead of use, spread like the requests will be.
func (p *Pool) Warm(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for k, t := range p.shards {
		share := n / len(p.shards)
		if k < n%len(p.shards) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Warm(ctx, p.ep.BaseURL, share)
		}()
	}
	wg.Wait()
}

// Close closes every shard's idle and unused connections.
func (p *Pool) Close() {
	for _, t := range p.shards {
		t.Close()
	}
}
