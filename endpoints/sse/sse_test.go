package sse

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// refParse is a plain reading of the event-stream rules over a whole input,
// the reference the streaming Reader must agree with however the bytes arrive:
// a leading byte order mark is dropped, and an "error" field is data that
// makes its event an error event, shown as show does.
func refParse(in []byte) []string {
	in = bytes.TrimPrefix(in, []byte("\xEF\xBB\xBF"))
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in)
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var out []string
	var data, typ []byte
	has, isErr := false, false
	emit := func() {
		if has {
			out = append(out, show(Event{Data: data, Error: isErr || string(typ) == "error"}))
		}
		data, typ, has, isErr = nil, nil, false, false
	}
	for _, l := range lines {
		if len(l) == 0 {
			emit()
			continue
		}
		if l[0] == ':' {
			continue
		}
		name, val := l, []byte(nil)
		if i := bytes.IndexByte(l, ':'); i >= 0 {
			name, val = l[:i], l[i+1:]
			if len(val) > 0 && val[0] == ' ' {
				val = val[1:]
			}
		}
		switch string(name) {
		case "error":
			isErr = true
			fallthrough
		case "data":
			if has {
				data = append(data, '\n')
			}
			data = append(data, val...)
			has = true
		case "event":
			typ = val
		}
	}
	emit()
	return out
}

// show is an event as the tests compare it: its data, after "error! " for
// an error event.
func show(ev Event) string {
	if ev.Error {
		return "error! " + string(ev.Data)
	}
	return string(ev.Data)
}

func readAll(t testing.TB, r io.Reader) []string {
	t.Helper()
	sr := NewReader(r)
	sr.SetMaxEvent(1 << 20)
	var out []string
	for {
		ev, err := sr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next: %v", err)
			}
			return out
		}
		out = append(out, show(ev))
	}
}

func TestReaderParsesEvents(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   string
		want []string
	}{
		"one event per blank line":              {"data: a\n\ndata: b\n\n", []string{"a", "b"}},
		"multi-line data joins with newline":    {"data: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}},
		"CRLF line ends":                        {"data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}},
		"lone CR line ends":                     {"data: x\r\rdata: y\r\r", []string{"x", "y"}},
		"comments and keep-alives are skipped":  {": ping\n\ndata: x\n\n:\n\n", []string{"x"}},
		"only one leading space is stripped":    {"data:  two\n\ndata:none\n\n", []string{" two", "none"}},
		"event and id fields do not add data":   {"event: delta\nid: 7\ndata: x\n\n", []string{"x"}},
		"a blank line with no data is no event": {"\n\n\ndata: x\n\n", []string{"x"}},
		"empty data field is an event":          {"data\n\n", []string{""}},
		"last event without blank line at EOF":  {"data: a\n\ndata: [DONE]\n", []string{"a", "[DONE]"}},
		"last line without newline at EOF":      {"data: a\n\ndata: [DONE]", []string{"a", "[DONE]"}},
		"colon inside the value is kept":        {"data: {\"k\": \"a:b\"}\n\n", []string{"{\"k\": \"a:b\"}"}},
		"unknown field lines are ignored":       {"foo: bar\ndata: x\n\n", []string{"x"}},
		"empty stream gives no event":           {"", nil},
		// The spec: one leading U+FEFF is ignored; a second is part of the
		// first line's field name, which is then unknown.
		"a leading byte order mark is skipped":    {"\xEF\xBB\xBFdata: a\n\n", []string{"a"}},
		"only one byte order mark is skipped":     {"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", []string{"b"}},
		"a byte order mark later is data":         {"data: \xEF\xBB\xBFa\n\n", []string{"\xEF\xBB\xBFa"}},
		"a stream of a lone partial mark is none": {"\xEF\xBB", nil},
		// llama.cpp before PR 16109: "error: {json}" then data: [DONE].
		"llama.cpp's error line is an error event": {"error: {\"code\":500,\"message\":\"x\"}\n\ndata: [DONE]\n\n", []string{"error! {\"code\":500,\"message\":\"x\"}", "[DONE]"}},
		"event: error makes an error event":        {"event: error\ndata: {\"type\":\"error\"}\n\ndata: b\n\n", []string{"error! {\"type\":\"error\"}", "b"}},
		"another event type is no error":           {"event: message\ndata: a\n\n", []string{"a"}},
		"an error type without data is no event":   {"event: error\n\ndata: a\n\n", []string{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := readAll(t, strings.NewReader(tc.in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			// The same bytes one at a time must give the same events.
			if got := readAll(t, iotest.OneByteReader(strings.NewReader(tc.in))); !slices.Equal(got, tc.want) {
				t.Fatalf("one byte at a time: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReaderGrowsForLongEventsAndStopsAtTheLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	got := readAll(t, strings.NewReader("data: "+long+"\n\n"))
	if len(got) != 1 || got[0] != long {
		t.Fatalf("long event not read whole: %d events", len(got))
	}
	r := NewReader(strings.NewReader("data: " + long + "\n\n"))
	r.SetMaxEvent(1 << 10)
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// stampedReader hands out one scripted piece per Read and advances a fake clock.
type stampedReader struct {
	pieces []string
	clock  *time.Time
}

func (s *stampedReader) Read(p []byte) (int, error) {
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	*s.clock = s.clock.Add(time.Second)
	n := copy(p, s.pieces[0])
	s.pieces = s.pieces[1:]
	return n, nil
}

func TestEventTimeIsTheReadThatCompletedIt(t *testing.T) {
	t.Parallel()
	base := time.Unix(0, 0)
	clock := base
	src := &stampedReader{clock: &clock, pieces: []string{
		"data: a\n\ndata: b\n\n", // read 1: two whole events
		"data: c",                // read 2: half an event
		"\n\n",                   // read 3: completes it
	}}
	r := NewReader(src)
	r.SetClock(func() time.Time { return clock })
	want := []struct {
		data string
		sec  int64
	}{{"a", 1}, {"b", 1}, {"c", 3}}
	for _, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != w.data || ev.Time.Sub(base) != time.Duration(w.sec)*time.Second {
			t.Fatalf("event %q at %v, want %q at %ds", ev.Data, ev.Time.Sub(base), w.data, w.sec)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
}

func TestReadErrorsAreReturned(t *testing.T) {
	t.Parallel()
	boom := errors.New("reset")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first = %q, %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

// FuzzReader checks that the streaming reader agrees with the whole-input
// reference however the input is split into reads, and never panics.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", "data: a\r\rdata:b\n", ": c\n\ndata\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"event: e\ndata: 1\ndata: 2\n\n", "\r\n\r\n\n", "data:\r",
		"\xEF\xBB\xBFdata: a\n\n", "\xEF\xBBdata: a\n\n", "error: {}\n\ndata: [DONE]\n\n", "event: error\ndata: e\n\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		want := refParse(in)
		got := readAll(t, &splitReader{b: in, n: int(split%17) + 1})
		if !slices.Equal(got, want) {
			t.Fatalf("split %d: got %q, want %q", split%17+1, got, want)
		}
	})
}

// splitReader returns at most n bytes per Read.
type splitReader struct {
	b []byte
	n int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := min(s.n, len(p), len(s.b))
	copy(p, s.b[:n])
	s.b = s.b[n:]
	return n, nil
}

// comments is a stream of keep-alive comments without end.
type comments struct{}

func (comments) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ":\n"[i%2]
	}
	return len(p) &^ 1, nil
}

func TestReaderStopsAtItsByteLimitEvenWithoutEvents(t *testing.T) {
	t.Parallel()
	r := NewReader(comments{})
	r.SetMaxBytes(100 << 10)
	_, err := r.Next()
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("Next = %v, want ErrBodyTooLarge", err)
	}
	if r.Bytes <= 100<<10 || r.Bytes > 100<<10+64<<10 {
		t.Fatalf("read %d bytes for a 100 KiB limit", r.Bytes)
	}
	// Without a limit the same stream would never end; a limit of 0 is none.
	r = NewReader(io.MultiReader(io.LimitReader(comments{}, 1<<20), strings.NewReader("data: x\n\n")))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "x" {
		t.Fatalf("%q %v", ev.Data, err)
	}
}
