package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// echoHeaders answers with status the request's headers quoted back as a
// proxy's or a debugging server's error page does: raw, JSON-escaped and
// percent-encoded.
func echoHeaders(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var raw bytes.Buffer
		r.Header.Write(&raw)
		js, _ := json.Marshal(map[string]any{"headers": r.Header})
		w.WriteHeader(status)
		w.Write([]byte("you sent:\n" + raw.String() + string(js) + " " + url.QueryEscape(r.Header.Get("Authorization"))))
	}
}

// quotesToken says whether s holds the token in any letter case.
func quotesToken(s string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(agentToken)) ||
		strings.Contains(strings.ToLower(s), strings.ToLower(url.QueryEscape(agentToken)))
}

// The truth: no error of the coordinator's quotes the agent token, even
// when what answers at an agent's address (a proxy, a server on the wrong
// port) writes the request's headers back in its error page: the token
// would otherwise reach stderr at the dial, and the report (an agent's
// lost reason) mid-run. The page's other text is still quoted.
func TestAnEchoedTokenIsNotQuotedBack(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized} {
		srv := httptest.NewServer(echoHeaders(status))
		addr := strings.TrimPrefix(srv.URL, "http://")
		_, err := Dial(context.Background(), []string{addr}, agentToken)
		srv.Close()
		if err == nil || quotesToken(err.Error()) || !strings.Contains(err.Error(), "you sent") {
			t.Errorf("dial of a server answering %d with the headers: %v; want an error quoting its page but not the token", status, err)
		}
	}

	// An agent whose prepare, behind a proxy, fails with the headers
	// quoted back: the agent is lost, and the reason in the report holds
	// no token.
	real := NewServer(ServerOptions{Name: "a0", Getenv: func(string) string { return "" }, Token: agentToken}).Handler()
	mux := http.NewServeMux()
	mux.Handle(RoutePing, real)
	mux.Handle(RoutePrepare, echoHeaders(http.StatusBadGateway))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	conns, err := Dial(context.Background(), []string{strings.TrimPrefix(srv.URL, "http://")}, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	o, plan := simRun(t, 2, time.Millisecond)
	run := RunPhase(context.Background(), o, plan, conns)
	if len(run.Result.Agents) != 1 {
		t.Fatalf("%d agents in the result; want 1", len(run.Result.Agents))
	}
	lost := run.Result.Agents[0].Lost
	if lost == "" || quotesToken(lost) || !strings.Contains(lost, "you sent") {
		t.Errorf("the agent lost at its prepare: reason %q; want one quoting the page but not the token", lost)
	}
}
