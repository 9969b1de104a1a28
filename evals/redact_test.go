package evals

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// shortSecret is a header value of 5 bytes: a secret (4 or more), below the
// 8 bytes of which endpoints.Client.Post redacts a 2xx body.
const shortSecret = "k3y5Z"

// longPPLWithTrace runs long-ppl, one prompt, on a server answering by h,
// every request sent with the header X-Trace: shortSecret.
func longPPLWithTrace(t *testing.T, h http.HandlerFunc) schema.EvalResult {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m", Headers: []string{"X-Trace=" + shortSecret}},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return runEval("long-ppl", Config{Endpoint: ep, Limit: 1, GenTokens: 4}, SampleDocs())
}

// quotedPiece is the first 3 bytes of shortSecret that f quotes in its body
// or detail ("" where none): 3 characters of a secret are what ClipBody
// counts as telling.
func quotedPiece(f *schema.EvalFailure) string {
	for i := 0; i+3 <= len(shortSecret); i++ {
		if p := shortSecret[i : i+3]; strings.Contains(f.Body, p) || strings.Contains(f.Detail, p) {
			return p
		}
	}
	return ""
}

// A server that echoes a request header in a 200 body that is no
// completion: endpoints.Client.Post redacts a 2xx body only of secrets of 8
// bytes or more, so a 5-byte header value reaches the eval whole. Its
// failure must carry none of it, not even the first bytes of a value that
// straddles the BodyLimit cut.
func TestAShortHeaderValueAcrossTheBodyCutLeaksNoPrefix(t *testing.T) {
	t.Parallel()
	for _, start := range []int{endpoints.BodyLimit - 3, endpoints.BodyLimit - 1, endpoints.BodyLimit - 5, 40} {
		t.Run(fmt.Sprintf("the value at byte %d", start), func(t *testing.T) {
			t.Parallel()
			res := longPPLWithTrace(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				head := `{"choices":[],"note":"`
				body := head + strings.Repeat("x", start-len(head)) + r.Header.Get("X-Trace") + strings.Repeat("y", 300) + `"}`
				if strings.Index(body, shortSecret) != start {
					t.Errorf("the header did not arrive: %q", r.Header.Get("X-Trace"))
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, body)
			})
			f := res.Failure
			if res.Status != StatusFailed || KindOf(f) != BadResponse || len(f.Body) > endpoints.BodyLimit {
				t.Fatalf("%+v %+v, want a bad_response quoting at most %d bytes", res, f, endpoints.BodyLimit)
			}
			if p := quotedPiece(f); p != "" {
				t.Errorf("the failure quotes %q of the header value: body %q", p, f.Body)
			}
			head := `{"choices":[],"note":"`
			if want := (head + strings.Repeat("x", start-len(head)) + "***" + strings.Repeat("y", 300))[:endpoints.BodyLimit]; f.Body != want {
				t.Errorf("body %q,\nwant %q: the answer's first %d bytes with the value as ***", f.Body, want, endpoints.BodyLimit)
			}
		})
	}
}

// A 2xx other than 200 is an error to the evals, and its error message is
// quoted in the detail, clipped to 160 bytes: a 5-byte header value that a
// 202 echoes across that clip leaks no prefix either (Post redacted only
// secrets of 8 bytes or more from the 2xx body).
func TestAShortHeaderValueAcrossTheMessageClipLeaksNoPrefix(t *testing.T) {
	t.Parallel()
	res := longPPLWithTrace(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"error":{"message":"%s%s%s"}}`, strings.Repeat("x", 157), r.Header.Get("X-Trace"), strings.Repeat("y", 40))
	})
	f := res.Failure
	if res.Status != StatusFailed || KindOf(f) != HTTPError || f.HTTPStatus != http.StatusAccepted || !strings.Contains(f.Detail, "HTTP 202: xxx") {
		t.Fatalf("%+v %+v, want http_error 202 quoting the message", res, f)
	}
	if p := quotedPiece(f); p != "" {
		t.Errorf("the failure quotes %q of the header value: detail %q", p, f.Detail)
	}
}
