package agent

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

const agentToken = "tok-0123456789abcdef0123456789abcdef"

// tokenAgent starts an agent started with token ("" for none) and returns
// its address.
func tokenAgent(t *testing.T, w *wire, token string) string {
	t.Helper()
	s := NewServer(ServerOptions{Name: "a0", Getenv: func(string) string { return "" }, Token: token})
	h := s.Handler()
	if w != nil {
		h = w.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// The truth: an agent started with a token sends load only for a
// coordinator that gives it. Dialled without one, or with another, it is
// refused before any load, in a bad-input error naming the agent and the
// flag, quoting neither token; dialled with it, a phase runs to the end,
// and every request the coordinator sent carried it.
func TestAnAgentWithATokenServesOnlyACoordinatorThatGivesIt(t *testing.T) {
	const wrong = "not-the-token-0123456789abcdef"
	w := &wire{}
	addr := tokenAgent(t, w, agentToken)
	for _, tc := range []struct{ token, want string }{
		{"", "asks for a token"},
		{wrong, "refused the token"},
	} {
		_, err := Dial(context.Background(), []string{addr}, tc.token)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("dialled with token %q: %v; want bad input naming %s and %q", tc.token, err, addr, tc.want)
		}
		if strings.Contains(err.Error(), agentToken) || strings.Contains(err.Error(), wrong) {
			t.Fatalf("the error quotes a token: %v", err)
		}
	}
	o, plan := simRun(t, 12, time.Millisecond)
	conns, err := Dial(context.Background(), []string{addr}, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	run := RunPhase(context.Background(), o, plan, conns)
	if r := run.Result; r.Status != schema.StatusComplete || r.Completed != 12 {
		t.Fatalf("status %s, completed %d; want complete, 12 (%v)", r.Status, r.Completed, Lost(r))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// bodies holds each request's body, then its header.
	authorized := 0
	for k := 1; k < len(w.bodies); k += 2 {
		if bytes.Contains(w.bodies[k], []byte("Authorization: Bearer "+agentToken)) {
			authorized++
		}
	}
	if sent := len(w.bodies) / 2; authorized != sent-2 {
		// The two dials refused above carried none and the wrong one.
		t.Errorf("%d of %d requests to the agent carried its token; want all but the two refused dials", authorized, sent)
	}
}

// The truth: the routes that make an agent send load answer 401 to a
// request without its token or with another, and do nothing: a start with
// the token then finds no phase prepared (409). A ping without a token is
// answered, as a Kubernetes readiness probe needs, and says that a token
// is asked for; one with a wrong token is 401. No answer quotes a token.
func TestAnAgentsLoadRoutesRefuseAMissingOrWrongToken(t *testing.T) {
	addr := tokenAgent(t, nil, agentToken)
	do := func(method, route, auth, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+route, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	start := fmt.Sprintf(`{"at_unix_nano": %d, "token": "x"}`, time.Now().UnixNano())
	plan := `{"base_url": "http://127.0.0.1:1/v1", "spec": {"name": "p", "n": 1}, "shard": {"count": 1}}`
	for _, auth := range []string{"", "Bearer wrong-0123456789abcdef", agentToken, "Basic " + agentToken} {
		for _, rt := range []struct{ route, body string }{{RoutePrepare, plan}, {RouteStart, start}, {RouteCancel, ""}} {
			if status, body := do(http.MethodPost, rt.route, auth, rt.body); status != http.StatusUnauthorized || strings.Contains(body, agentToken) {
				t.Errorf("POST %s with Authorization %q: %d %q; want 401, quoting no token", rt.route, auth, status, body)
			}
		}
	}
	if status, body := do(http.MethodPost, RouteStart, "Bearer "+agentToken, start); status != http.StatusConflict {
		t.Errorf("a start with the token after the refused prepares: %d %q; want 409 (nothing prepared)", status, body)
	}
	if status, body := do(http.MethodGet, RoutePing, "", ""); status != http.StatusOK || !strings.Contains(body, `"token_required":true`) {
		t.Errorf("a ping with no token: %d %q; want 200 saying token_required", status, body)
	}
	if status, _ := do(http.MethodGet, RoutePing, "Bearer wrong-0123456789abcdef", ""); status != http.StatusUnauthorized {
		t.Errorf("a ping with a wrong token: %d; want 401", status)
	}
}

// The truth: a coordinator given a token refuses an agent started without
// one, before any load: that agent would take load from anyone.
func TestACoordinatorWithATokenRefusesAnAgentWithout(t *testing.T) {
	addr := tokenAgent(t, nil, "")
	_, err := Dial(context.Background(), []string{addr}, agentToken)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "takes no token") {
		t.Fatalf("dial: %v; want bad input saying the agent takes no token", err)
	}
}

// The truth: ReadToken takes a variable's value with its surrounding white
// space dropped (a Secret made from a file keeps its newline), and refuses,
// in bad input quoting no value, a name that is no variable's (a token
// pasted there is clipped), an unset variable, a token shorter than
// MinTokenLen, and one with a space inside.
func TestReadTokenRefusesWhatCannotGuardAnAgent(t *testing.T) {
	env := map[string]string{"GOOD": agentToken + "\n", "SHORT": "abc123", "SPACED": "0123456789 abcdef0123"}
	getenv := func(k string) string { return env[k] }
	if tok, err := ReadToken("--token-env", "GOOD", getenv); err != nil || tok != agentToken {
		t.Fatalf("GOOD: %q, %v; want the token without its newline", tok, err)
	}
	for name, want := range map[string]string{
		"UNSET": "unset or empty", "SHORT": "fewer than 16", "SPACED": "space or control", agentToken + "-x": "want the name",
	} {
		_, err := ReadToken("--token-env", name, getenv)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "--token-env ") {
			t.Errorf("%.8s: %v; want bad input saying %q", name, err, want)
			continue
		}
		for _, v := range []string{agentToken, "abc123", "0123456789 abcdef0123"} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("%.8s: the error quotes a value: %v", name, err)
			}
		}
	}
}
