// Package sse reads Server-Sent Events and stamps each event with the moment
// its bytes arrived, before anyone decodes them.
//
// A benchmark's TTFT and inter-token gaps are only as good as these stamps, so
// the reader takes the time right after the Read that delivered an event's last
// line returns, on the monotonic clock, and leaves JSON decoding to the caller.
// It follows the WHATWG event-stream rules: lines end in CRLF, LF or CR; a line
// starting with ':' is a comment; "data" lines of one event are joined with
// "\n"; a blank line dispatches the event; one UTF-8 byte order mark at the
// very start of the stream is skipped. Unlike the spec it also dispatches a
// last event cut off by EOF without its blank line, because some servers end
// their stream with "data: [DONE]\n" and nothing after, and it reads an
// "error" field as the data of an error event (Event.Error), because
// llama.cpp's server before PR 16109 (September 2025) wrote a stream's
// error as "error: {...}", a field the spec ignores.
package sse

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// DefaultMaxEvent is the largest event, in bytes, a Reader accepts unless told otherwise.
const DefaultMaxEvent = 8 << 20

// ErrTooLarge is returned when one line or event outgrows the Reader's limit.
var ErrTooLarge = errors.New("sse: event exceeds size limit")

// ErrBodyTooLarge is returned once the source has given more bytes than the
// Reader's body limit (SetMaxBytes), whatever they hold: it ends a stream of
// comments or empty events that would otherwise never end.
var ErrBodyTooLarge = errors.New("sse: stream exceeds its byte limit")

// Event is one dispatched event. Its slices are only valid until the next call
// to Next.
type Event struct {
	// Data is the event's data lines joined with "\n".
	Data []byte
	// Type is the value of the event's "event:" field, empty when none.
	Type []byte
	// Error is true for an error event: its type is "error" (event: error,
	// as OpenAI's Assistants stream and Anthropic's API send one), or it
	// had an "error" field, whose value is then in Data (llama.cpp before
	// PR 16109).
	Error bool
	// Time is when the Read that delivered the event's last line returned.
	Time time.Time
}

// Reader reads events from an io.Reader. It is not safe for concurrent use.
type Reader struct {
	src      io.Reader
	now      func() time.Time
	max      int
	maxBytes int64

	buf        []byte
	start, end int // buf[start:end] holds bytes not yet parsed
	stamp      time.Time
	err        error // sticky error from src
	skipLF     bool  // the previous line ended in '\r': a leading '\n' belongs to it
	atStart    bool  // nothing parsed yet: a byte order mark may come first

	data     []byte
	typ      []byte
	hasData  bool
	hasError bool // the pending event had an "error" field
	// Bytes is the number of bytes read from the source so far.
	Bytes int64
	// Reads is the number of Read calls that returned data.
	Reads int64
}

// NewReader returns a Reader over src with a 32 KiB buffer that stamps events
// with time.Now.
func NewReader(src io.Reader) *Reader {
	r := &Reader{}
	r.Reset(src)
	return r
}

// Reset makes r read from src, keeping its buffers, so one Reader can serve
// many streams without allocating.
func (r *Reader) Reset(src io.Reader) {
	if r.buf == nil {
		r.buf = make([]byte, 32<<10)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.max == 0 {
		r.max = DefaultMaxEvent
	}
	r.src = src
	r.start, r.end = 0, 0
	r.stamp = time.Time{}
	r.err = nil
	r.skipLF = false
	r.atStart = true
	r.data = r.data[:0]
	r.typ = r.typ[:0]
	r.hasData, r.hasError = false, false
	r.Bytes, r.Reads = 0, 0
}

// SetClock replaces time.Now as the source of event stamps (for tests).
func (r *Reader) SetClock(now func() time.Time) { r.now = now }

// SetMaxEvent sets the largest line or event in bytes.
func (r *Reader) SetMaxEvent(n int) { r.max = n }

// SetMaxBytes bounds the bytes read from the source; 0 means no bound.
func (r *Reader) SetMaxBytes(n int64) { r.maxBytes = n }

// LastRead is the time the most recent Read from the source returned data.
func (r *Reader) LastRead() time.Time { return r.stamp }

// Next returns the next event. At the end of the stream it returns io.EOF
// (after a last event cut off without its blank line, if any); a read error
// from the source is returned as is.
func (r *Reader) Next() (Event, error) {
	for {
		if r.atStart && !r.skipBOM() {
			r.fill()
			continue
		}
		line, ok := r.line()
		if !ok {
			if r.err != nil {
				return r.finish()
			}
			r.fill()
			continue
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.typ = r.typ[:0]
			r.hasError = false
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

// finish handles the end of the source: a pending event is dispatched once,
// then the error is returned.
func (r *Reader) finish() (Event, error) {
	if r.start < r.end {
		// An unterminated last line: treat EOF as its end.
		line := r.buf[r.start:r.end]
		r.start = r.end
		if len(line) > 0 {
			if err := r.field(line); err != nil {
				return Event{}, err
			}
		}
	}
	if r.hasData {
		return r.dispatch(), nil
	}
	return Event{}, r.err
}

// bom is the UTF-8 encoding of U+FEFF.
var bom = []byte{0xEF, 0xBB, 0xBF}

// skipBOM drops a byte order mark at the start of the stream, as the spec
// says to; it returns false while the bytes read so far are too few to
// tell (a mark split across reads).
func (r *Reader) skipBOM() bool {
	win := r.buf[r.start:r.end]
	if len(win) < len(bom) && r.err == nil && bytes.HasPrefix(bom, win) {
		return false
	}
	if bytes.HasPrefix(win, bom) {
		r.start += len(bom)
	}
	r.atStart = false
	return true
}

func (r *Reader) dispatch() Event {
	ev := Event{Data: r.data, Type: r.typ, Time: r.stamp, Error: r.hasError || string(r.typ) == "error"}
	r.hasData, r.hasError = false, false
	// The next event reuses the buffers; the caller was told Data is only valid until then.
	r.data = r.data[:0:cap(r.data)]
	r.typ = r.typ[:0:cap(r.typ)]
	// Returning slices that alias buffers the next call appends to is safe because
	// appends start at length zero and the caller must not keep them.
	return ev
}

// field applies one non-blank line to the pending event.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment, e.g. a keep-alive
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "error":
		// llama.cpp's error line: its value is the event's data.
		r.hasError = true
		fallthrough
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		if len(r.data)+len(value) > r.max {
			return ErrTooLarge
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.typ = append(r.typ[:0], value...)
	}
	return nil
}

// line returns the next complete line without its terminator, or false when
// the buffer holds no complete line.
func (r *Reader) line() ([]byte, bool) {
	if r.skipLF && r.start < r.end {
		if r.buf[r.start] == '\n' {
			r.start++
		}
		r.skipLF = false
	}
	win := r.buf[r.start:r.end]
	i := bytes.IndexByte(win, '\n')
	cut := i
	if cut < 0 {
		cut = len(win)
	}
	if j := bytes.IndexByte(win[:cut], '\r'); j >= 0 {
		// A CR ends the line; a following LF (now or in the next read) is part of it.
		line := win[:j]
		if j+1 < len(win) {
			if win[j+1] == '\n' {
				r.start += j + 2
			} else {
				r.start += j + 1
			}
		} else {
			r.start += j + 1
			r.skipLF = true
		}
		return line, true
	}
	if i < 0 {
		return nil, false
	}
	r.start += i + 1
	return win[:i], true
}

// fill reads more bytes from the source, compacting or growing the buffer
// first when needed.
func (r *Reader) fill() {
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		if len(r.buf) >= r.max+2 {
			r.err = ErrTooLarge
			return
		}
		nb := make([]byte, min(2*len(r.buf), r.max+2))
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.end:])
		if n > 0 {
			r.stamp = r.now()
			r.end += n
			r.Bytes += int64(n)
			r.Reads++
		}
		if err != nil {
			r.err = err
			return
		}
		if r.maxBytes > 0 && r.Bytes > r.maxBytes {
			r.err = ErrBodyTooLarge
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}
