package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The truth: Go's http.Client, following a 307 to another port of the same
// host, sends the request's Authorization header along. The coordinator
// follows no redirect, so what answers at an agent's address with one gets
// the agents' token and the target gets nothing; the 307 is a failed dial.
func TestTheCoordinatorFollowsNoRedirectWithItsToken(t *testing.T) {
	var reached atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), agentToken) {
			t.Errorf("the token reached %s", r.Host)
		}
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	_, err := Dial(context.Background(), []string{strings.TrimPrefix(redirector.URL, "http://")}, agentToken)
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("dial: %v; want the 307 as its failure", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}
