package endpointstest

import (
	"slices"
	"testing"
	"time"
)

// chat64 streams a chat of 64 tokens (ignore_eos) from base and returns
// the reply.
func chat64(t *testing.T, base, model string) reply {
	t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "Tell a story."}},
		"max_tokens": 64, "stream": true, "ignore_eos": true}
	r := post(t, base+"/chat/completions", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	return r
}

// The truth of a buffering proxy: an answer body of S bytes goes to the
// client in Blocks(S, B) writes, each B bytes but the last; BufferAll in
// one write of S; with X-Accel-Buffering: no from upstream, unbuffered,
// piece by piece as the upstream flushed them (here more writes than 4 KiB
// blocks), and the header is not passed on. The stream the client reads
// is the upstream's, event for event.
func TestABufferingProxyForwardsTheStreamInBlocks(t *testing.T) {
	t.Parallel()
	// A token a millisecond: the upstream flushes each event on its own.
	p := Start(t, VLLM, Options{Gap: time.Millisecond})
	direct := readStream(t, chat64(t, p.BaseURL(), p.Opts.Model).body)
	for _, tc := range []struct {
		name       string
		block      int
		accelNo    bool
		unbuffered bool
	}{
		{"4 KiB blocks, as nginx's proxy_buffers on Linux", 4096, false, false},
		{"8 KiB blocks", 8192, false, false},
		{"the whole answer once it has ended", BufferAll, false, false},
		{"an upstream saying X-Accel-Buffering: no", 4096, true, true},
	} {
		upstream := p.URL
		if tc.accelNo {
			upstream = AccelNo(t, p.URL).URL
		}
		b := StartBuffering(t, upstream, tc.block)
		r := chat64(t, b.BaseURL(), p.Opts.Model)
		got := readStream(t, r.body)
		if len(got.events) != len(direct.events) || !got.done {
			t.Errorf("%s: %d events (done %v), want the upstream's %d", tc.name, len(got.events), got.done, len(direct.events))
		}
		if h := r.header.Get("X-Accel-Buffering"); h != "" {
			t.Errorf("%s: X-Accel-Buffering %q reached the client; nginx hides it", tc.name, h)
		}
		answers := b.Answers()
		if len(answers) != 1 {
			t.Fatalf("%s: %d answers forwarded, want 1", tc.name, len(answers))
		}
		fw, size := answers[0], len(r.body)
		if fw.Unbuffered != tc.unbuffered {
			t.Errorf("%s: unbuffered %v, want %v", tc.name, fw.Unbuffered, tc.unbuffered)
		}
		sum := 0
		for _, n := range fw.Writes {
			sum += n
		}
		if sum != size {
			t.Errorf("%s: writes %v sum to %d, the body is %d bytes", tc.name, fw.Writes, sum, size)
		}
		if tc.unbuffered {
			if len(fw.Writes) <= Blocks(size, 4096) {
				t.Errorf("%s: %d writes of %d bytes; unbuffered, more than its %d blocks of 4 KiB", tc.name, len(fw.Writes), size, Blocks(size, 4096))
			}
			continue
		}
		want := make([]int, Blocks(size, tc.block))
		for k := range want {
			want[k] = tc.block
		}
		want[len(want)-1] = size - tc.block*(len(want)-1)
		if tc.block == BufferAll {
			want = []int{size}
		}
		if !slices.Equal(fw.Writes, want) {
			t.Errorf("%s: writes %v, want %v for %d bytes", tc.name, fw.Writes, want, size)
		}
	}
}

// Blocks counts the writes of a body: 10000 bytes are 3 blocks of 4 KiB
// (4096 + 4096 + 1808), 2 of 8 KiB, 1 whole; 4096 bytes are 1 block.
func TestBlocksCountsTheWritesOfABody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ size, block, want int }{
		{10000, 4096, 3}, {10000, 8192, 2}, {10000, BufferAll, 1}, {4096, 4096, 1}, {4097, 4096, 2}, {0, 4096, 1},
	} {
		if got := Blocks(tc.size, tc.block); got != tc.want {
			t.Errorf("Blocks(%d, %d) = %d, want %d", tc.size, tc.block, got, tc.want)
		}
	}
}

// What is not a stream passes as it came: the status, and a refusal's body.
func TestABufferingProxyPassesStatusesOn(t *testing.T) {
	t.Parallel()
	p := Start(t, SGLang, Options{})
	b := StartBuffering(t, p.URL, 4096)
	if r := get(t, b.BaseURL()+"/models"); r.status != 200 || len(r.body) == 0 {
		t.Errorf("GET /models through the proxy: %d %s", r.status, r.body)
	}
	direct := post(t, p.BaseURL()+"/chat/completions", "{")
	proxied := post(t, b.BaseURL()+"/chat/completions", "{")
	if proxied.status != direct.status || string(proxied.body) != string(direct.body) {
		t.Errorf("a malformed request: %d %s through the proxy, %d %s direct", proxied.status, proxied.body, direct.status, direct.body)
	}
}
