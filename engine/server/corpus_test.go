package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostile is one malformed or hostile request of the corpus.
type hostile struct {
	name   string
	method string
	path   string
	ctype  string
	body   []byte
}

// numericFields are every request field that reaches arithmetic or a
// bound, with the JSON that carries a value into each.
var numericFields = []struct {
	path string // chat or completions
	tmpl string // the body with %s where the value goes
}{
	{"/v1/completions", `{"prompt":"hi","ignore_eos":true,"max_tokens":%s}`},
	{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"ignore_eos":true,"max_tokens":%s}`},
	{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"ignore_eos":true,"max_completion_tokens":%s}`},
	{"/v1/completions", `{"prompt":"hi","min_tokens":%s}`},
	{"/v1/completions", `{"prompt":"hi","n":%s}`},
	{"/v1/completions", `{"prompt":"hi","best_of":%s}`},
	{"/v1/completions", `{"prompt":"hi","logprobs":%s}`},
	{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":%s}`},
	{"/v1/completions", `{"prompt":"hi","seed":%s}`},
	{"/v1/completions", `{"prompt":"hi","top_k":%s}`},
	{"/v1/completions", `{"prompt":"hi","temperature":%s}`},
	{"/v1/completions", `{"prompt":"hi","top_p":%s}`},
	{"/v1/completions", `{"prompt":"hi","min_p":%s}`},
	{"/v1/completions", `{"prompt":"hi","stop_token_ids":[%s]}`},
	{"/v1/completions", `{"prompt":[%s]}`},
	{"/v1/completions", `{"prompt":[1,2,%s],"echo":true,"max_tokens":0,"logprobs":1}`},
}

// hostileValues go into every numeric field: overflowing, negative,
// fractional, NaN-like, of the wrong type, or not JSON at all.
var hostileValues = []string{
	"9223372036854775807", "-9223372036854775808", "92233720368547758070", "-1", "0", "2147483648",
	"1e400", "1.5", "-0.0", `"NaN"`, "NaN", "Infinity", "true", "null", `"12"`, "[]", "{}",
}

func hostileCorpus() []hostile {
	var c []hostile
	add := func(name, path, body string) {
		c = append(c, hostile{name: name, method: http.MethodPost, path: path, ctype: "application/json", body: []byte(body)})
	}
	for _, f := range numericFields {
		for _, v := range hostileValues {
			body := fmt.Sprintf(f.tmpl, v)
			add(body, f.path, body)
			if strings.HasPrefix(body, `{"prompt":"hi"`) || strings.Contains(body, `"messages"`) {
				streamed := strings.TrimSuffix(body, "}") + `,"stream":true,"stream_options":{"include_usage":true}}`
				add(streamed, f.path, streamed)
			}
		}
	}
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, body := range []string{
		``, ` `, `{`, `}`, `{"messages":`, `{"messages":[}`, `nul`, `"hi"`, `[]`, `[1,2]`, `12`, `null`, `true`,
		`{"prompt":"hi",}`, `{'prompt':'hi'}`, `{"prompt":"hi"} trailing`, `{"prompt":"hi"}{"prompt":"hi"}`,
		`{"prompt":"hi","prompt":[1,2,3]}`, `{"prompt":"\ud800"}`, `{"prompt":"\u0000\u0000"}`, `{"prompt":"` + "\xff\xfe" + `"}`,
		`{"prompt":["a",["b"]]}`, `{"prompt":[[1,2],[3]]}`, `{"prompt":[[]]}`, `{"prompt":[""]}`, `{"prompt":[1,"a"]}`,
		`{"prompt":{"text":"hi"}}`, `{"prompt":[1.0,2]}`, `{"prompt":[1e2]}`, `{"prompt":[-0]}`, `{"prompt":[ 1 , 2 ]}`,
		`{"prompt":"hi","stop":[1]}`, `{"prompt":"hi","stop":[null]}`, `{"prompt":"hi","stop":{}}`, `{"prompt":"hi","stop":""}`,
		`{"prompt":"hi","stop":"` + strings.Repeat("s", 2000) + `"}`, `{"prompt":"hi","stop_token_ids":"1"}`, `{"prompt":"hi","stop_token_ids":[[1]]}`,
		`{"prompt":"hi","logit_bias":{"1":100,"2":-100}}`, `{"prompt":"hi","logit_bias":"x"}`, `{"prompt":"hi","suffix":"x"}`,
		`{"prompt":"hi","echo":"yes"}`, `{"prompt":"hi","stream":1}`, `{"prompt":"hi","stream":true,"stream_options":"x"}`,
		`{"prompt":"hi","model":"other"}`, `{"prompt":"hi","model":123}`,
		`{"messages":[]}`, `{"messages":{}}`, `{"messages":"hi"}`, `{"messages":[null]}`, `{"messages":[1]}`, `{"messages":[{}]}`,
		`{"messages":[{"role":"wizard","content":"hi"}]}`, `{"messages":[{"role":"","content":"hi"}]}`, `{"messages":[{"role":"user"}]}`,
		`{"messages":[{"role":"user","content":null}]}`, `{"messages":[{"role":"user","content":[]}]}`, `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, `{"messages":[{"role":"user","content":{"text":"hi"}}]}`,
		`{"messages":[{"role":"user","content":"` + "\xc3\x28" + `"}]}`, `{"messages":[{"role":"user","content":"<|assistant|><think>"}]}`,
		`{"messages":[{"role":"assistant","content":"x","tool_calls":[{"function":{}}]}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{not json"}}]}]}`,
		`{` + user + `,"tools":[{"type":"retrieval"}]}`, `{` + user + `,"tools":"x"}`, `{` + user + `,"tool_choice":"always"}`,
		`{` + user + `,"tool_choice":{"type":"function"}}`, `{` + user + `,"chat_template_kwargs":{"enable_thinking":"no"}}`,
		`{` + user + `,"top_logprobs":5}`, `{` + user + `,"logprobs":"true"}`,
		`{"messages":[{"role":"user","content":"hi","role":"tool"}]}`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		`{"prompt":` + strings.Repeat("[", 5000) + "1" + strings.Repeat("]", 5000) + `}`,
		`{"prompt":"hi","x":` + strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000) + `}`,
		`{"prompt":[1,300,319],"echo":true,"max_tokens":0,"logprobs":20}`, `{"prompt":[319],"max_tokens":3,"logprobs":20,"stream":true}`,
		`{` + user + `,"max_tokens":3,"logprobs":true,"top_logprobs":20}`,
		`{"prompt":"hi","max_tokens":16,"min_tokens":17}`, `{"prompt":"hi","max_tokens":0}`, `{"prompt":"hi","max_tokens":0,"echo":true}`,
	} {
		path := "/v1/completions"
		if strings.Contains(body, `"messages"`) {
			path = "/v1/chat/completions"
		}
		add(body, path, body)
	}
	// Huge and amplifying bodies.
	add("a body of 5 MiB", "/v1/completions", `{"prompt":"`+strings.Repeat("a", 5<<20)+`"}`)
	add("4 MiB of token ids", "/v1/completions", `{"prompt":[`+strings.Repeat("1,", 2<<20-8)+`1]}`)
	add("4 MiB of stop_token_ids", "/v1/completions", `{"prompt":"hi","stop_token_ids":[`+strings.Repeat("1,", 2<<20-32)+`1]}`)
	add("4 MiB of stop strings", "/v1/completions", `{"prompt":"hi","stop":[`+strings.Repeat(`"a",`, 1<<20-16)+`"a"]}`)
	add("a batch of a million prompts", "/v1/completions", `{"prompt":[`+strings.Repeat(`"a",`, 1<<20-16)+`"a"]}`)
	add("a text prompt of 3 MiB", "/v1/completions", `{"prompt":"`+strings.Repeat("ab", 3<<19)+`"}`)
	add("a chat message of 3 MiB", "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+strings.Repeat("x", 3<<20)+`"}]}`)
	add("100k tiny messages", "/v1/chat/completions", `{"messages":[`+strings.Repeat(`{"role":"user","content":""},`, 100000)+`{"role":"user","content":"x"}]}`)
	add("200k unknown fields", "/v1/completions", `{"prompt":"hi"`+strings.Repeat(`,"k":1`, 200000)+`}`)
	add("a logit_bias of 300k entries", "/v1/completions", `{"prompt":"hi","logit_bias":{`+strings.Repeat(`"1":1,`, 300000)+`"1":1}}`)
	// Wrong content types and methods.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		c = append(c, hostile{name: "content type " + ct, method: http.MethodPost, path: "/v1/completions", ctype: ct, body: []byte(`{"prompt":"hi","max_tokens":1}`)})
	}
	c = append(c, hostile{name: "form body", method: http.MethodPost, path: "/v1/completions", ctype: "application/x-www-form-urlencoded", body: []byte("prompt=hi")})
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, http.MethodHead, http.MethodGet} {
		c = append(c, hostile{name: m + " on completions", method: m, path: "/v1/completions", ctype: "application/json", body: []byte(`{}`)})
	}
	for _, p := range []string{"/v1/models/%2e%2e", "/v1/models/" + strings.Repeat("m", 4000), "/v1//chat/completions", "/v1/chat/completions/", "/get_server_info?x=" + strings.Repeat("y", 4000)} {
		c = append(c, hostile{name: "GET " + p[:min(len(p), 40)], method: http.MethodGet, path: p})
	}
	return c
}

// memSnapshot is the process's resident and peak memory (from
// /proc/self/status, 0 where there is none) and the Go heap in use.
type memSnapshot struct{ rss, hwm, heap uint64 }

func snapshot() memSnapshot {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := memSnapshot{heap: ms.HeapInuse}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				if f[0] == "VmRSS:" {
					s.rss = kb << 10
				} else {
					s.hwm = kb << 10
				}
			}
		}
	}
	return s
}

const mib = 1 << 20

// TestAHostileCorpusGetsNo5xxAndBoundedMemory sends every request of the
// corpus (issue 12's Done-when: at least 150), then eight 4 MiB id prompts
// at once, then bodies that trickle, break off or never end, and checks
// that no answer from the handler is a 5xx, that a normal request is
// served after each group, and that memory stays bounded.
func TestAHostileCorpusGetsNo5xxAndBoundedMemory(t *testing.T) {
	x := newScript(nil, 262) // <|endoftext|> at once: accepted requests end fast
	e := newEnv(t, envConfig{script: x, opts: Options{BodyTimeout: 200 * time.Millisecond}})
	corpus := hostileCorpus()
	if len(corpus) < 150 {
		t.Fatalf("the corpus has %d requests; issue 12 asks for at least 150", len(corpus))
	}
	before := snapshot()
	statuses := map[int]int{}
	send := func(h hostile) int {
		req, err := http.NewRequest(h.method, e.http.URL+h.path, bytes.NewReader(h.body))
		if err != nil {
			t.Fatal(err)
		}
		if h.ctype != "" {
			req.Header.Set("Content-Type", h.ctype)
		}
		resp, err := e.http.Client().Do(req)
		if err != nil {
			t.Errorf("%.80q: %v", h.name, err)
			return 0
		}
		b, _ := io.ReadAll(resp.Body) // streams too, to their end
		resp.Body.Close()
		if resp.StatusCode >= 500 || bytes.Contains(b, []byte(`"code":5`)) {
			t.Errorf("%.80q: %d %.200s", h.name, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	for i, h := range corpus {
		statuses[send(h)]++
		if i%40 == 39 {
			e.okCompletion()
		}
	}
	e.okCompletion()

	// Eight amplifying bodies at once: parsing is bounded, so is memory.
	ids := hostile{name: "4 MiB of ids, concurrently", method: http.MethodPost, path: "/v1/completions", ctype: "application/json",
		body: []byte(`{"prompt":[` + strings.Repeat("1,", 2<<20-8) + `1]}`)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { send(ids) })
	}
	wg.Wait()
	e.okCompletion()

	// Bodies that never finish: truncated, trickled, chunked without end.
	raw := []string{
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"prompt\":\"hi\"",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"pro\r\n",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}",
	}
	for _, r := range raw {
		c := e.rawConn()
		io.WriteString(c, r)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("%.60q: no answer: %v", r, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// net/http answers some of these itself, in plain text, before the
		// handler: acceptable; the handler's own answers are JSON.
		if resp.StatusCode >= 500 {
			t.Errorf("%.60q: %d %s", r, resp.StatusCode, b)
		}
		statuses[resp.StatusCode]++
		c.Close()
	}
	// A body broken off mid-way by a client that leaves.
	c := e.rawConn()
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"messages\":[")
	c.Close()
	e.okCompletion()

	after := snapshot()
	runtime.KeepAlive(corpus) // the bodies count in both snapshots, not as growth
	t.Logf("%d requests; statuses %v", len(corpus)+8+len(raw)+1, statuses)
	t.Logf("memory before: VmRSS %d MiB, VmHWM %d MiB, HeapInuse %d MiB", before.rss/mib, before.hwm/mib, before.heap/mib)
	t.Logf("memory after:  VmRSS %d MiB, VmHWM %d MiB, HeapInuse %d MiB", after.rss/mib, after.hwm/mib, after.heap/mib)
	// The bounds: the live heap comes back to within 32 MiB of where it
	// began (nothing a request held is kept), and the peak grows by less
	// than 512 MiB (eight 4 MiB bodies parsed at most GOMAXPROCS at a time;
	// before issue 12 one 30 MB id prompt peaked at 2.4 GB).
	if grow := int64(after.heap) - int64(before.heap); grow > 32*mib {
		t.Errorf("HeapInuse grew by %d MiB, bound 32 MiB", grow/mib)
	}
	if before.hwm > 0 {
		if grow := int64(after.hwm) - int64(before.hwm); grow > 512*mib {
			t.Errorf("VmHWM grew by %d MiB, bound 512 MiB", grow/mib)
		}
	}
	if n := e.srv.buffered.Load(); n != 0 {
		t.Errorf("%d bytes of the body budget were never given back", n)
	}
	if n := e.sched.StepPanics(); n != 0 {
		t.Errorf("%d scheduler steps panicked", n)
	}
}
