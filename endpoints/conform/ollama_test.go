package conform

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// Ollama drops ignore_eos (its request struct has no such field), so a
// model that stops at its EOS ends a stream before max_tokens. max-tokens
// fails, naming that; the checks built on its streams (concurrent-streams,
// disconnect) are judged as for a server without ignore_eos, on what they
// check: before, concurrent-streams failed all 32 streams for the same
// dropped field ("max_tokens 4 with ignore_eos, but completion_tokens 3").
// The fake's model stops after 3 tokens unless ignore_eos is honoured.
func TestAgainstOllamaADroppedIgnoreEOSFailsMaxTokensAlone(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{EOSAfter: 3})
	res := run(t, testConfig(p.BaseURL(), p.Opts.Model))
	deviates := map[string]bool{"max-tokens": true, "n": true, "completions-echo": true, "prompt-token-ids": true, "context-overflow": true}
	for id, r := range res {
		if (r.Status == string(Fail)) != deviates[id] {
			t.Errorf("%s: %s %q", id, r.Status, r.Detail)
		}
	}
	if r := res["max-tokens"]; !strings.Contains(r.Detail, "does not honour ignore_eos") {
		t.Errorf("max-tokens: %q; want it to name ignore_eos not honoured", r.Detail)
	}
	wantResult(t, res, "concurrent-streams", Pass, "without ignore_eos, which max-tokens found not honoured")
}

// sameIDs puts p behind a proxy that gives every answer the id
// "chatcmpl-7": Ollama's ids (rand.Intn(999)) as they fall when two of 32
// concurrent streams draw the same number, every time.
func sameIDs(t *testing.T, p *endpointstest.Personality) string {
	t.Helper()
	u, _ := url.Parse(p.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(r *http.Response) error {
		pr, pw := io.Pipe()
		body := r.Body
		go func() {
			sc := bufio.NewScanner(body)
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				line := ollamaID.ReplaceAllString(sc.Text(), `"id":"chatcmpl-7"`)
				if _, err := io.WriteString(pw, line+"\n"); err != nil {
					break
				}
			}
			body.Close()
			pw.Close()
		}()
		r.Body = pr
		r.ContentLength = -1
		r.Header.Del("Content-Length")
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

var ollamaID = regexp.MustCompile(`"id":"chatcmpl-[0-9]+"`)

// Streams that share an id but each count their own prompt have not
// crossed: concurrent-streams passes, saying the ids repeat. Before, it
// failed "streams 0 and 1 share the id", as it would against Ollama about
// 2 times in 5.
func TestConcurrentStreamsTellsRepeatedIDsFromCrossedStreams(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{})
	cfg := testConfig(sameIDs(t, p), p.Opts.Model)
	cfg.Only = []string{"concurrent-streams"}
	res := run(t, cfg)
	wantResult(t, res, "concurrent-streams", Pass, "31 share theirs with another stream")
}
