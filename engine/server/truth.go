package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/internal/rxstamp"
)

// Truth records, for every streamed request, when it arrived and when the
// server wrote each of its output events: the ground truth a client's
// timings are checked against (glmbench selftest). Times are Unix
// nanoseconds, read as the wall clock at start plus the monotonic time
// since, so they never jump; a client on the same host can place its own
// send and read times beside them, but the figures that matter compare
// durations, which need no shared clock.
type Truth struct {
	mu    sync.Mutex
	w     io.Writer
	epoch time.Time
}

// TruthLine is one request's record, one JSON line of the truth file.
type TruthLine struct {
	// Key is the request's "<nonce>-<i:06d>" prompt prefix, which names it
	// on the client's side too ("" when the prompt has none).
	Key     string  `json:"key"`
	Arrival int64   `json:"arrival_ns"`
	Events  []int64 `json:"events_ns"`
}

// NewTruth records into w, a line per request as each one ends, so a
// reader of the file sees every finished request.
func NewTruth(w io.Writer) *Truth {
	return &Truth{w: w, epoch: time.Now()}
}

func (t *Truth) write(l *TruthLine) {
	b, _ := json.Marshal(l)
	t.mu.Lock()
	t.w.Write(append(b, '\n'))
	t.mu.Unlock()
}

// stamp is now on the truth clock.
func (t *Truth) stamp() int64 { return t.at(time.Now()) }

func (t *Truth) at(x time.Time) int64 { return t.epoch.UnixNano() + int64(x.Sub(t.epoch)) }

var truthKey = regexp.MustCompile(`[0-9a-f]{8}-[0-9]{6}`)

// truthFor starts the record of a request whose prompt is the tokens of
// spec; it returns nil when nothing is recorded. The request arrived when
// its last bytes reached the host, by the kernel's receive stamp of its
// connection (ConnContext), else at start, when its handler began: the
// server's own wait for a core to read and parse it is part of the truth a
// client measures, not part of the client's error.
func (s *Server) truthFor(r *http.Request, spec *genSpec, start time.Time) *TruthLine {
	t := s.opts.Truth
	if t == nil || !spec.stream {
		return nil
	}
	rx, _ := r.Context().Value(rxKey{}).(*atomic.Int64)
	arrival, ok := rxstamp.Received(rx)
	if !ok {
		arrival = start
	}
	key := truthKey.FindString(s.tok.Decode(spec.prompt[:min(len(spec.prompt), 64)]))
	return &TruthLine{Key: key, Arrival: t.at(arrival)}
}

type rxKey struct{}

// ConnContext is http.Server's ConnContext for a server that keeps a truth
// record and listens through rxstamp.Listener: it lets truthFor date each
// request by its bytes' arrival.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if rx := rxstamp.Last(c); rx != nil {
		return context.WithValue(ctx, rxKey{}, rx)
	}
	return ctx
}
