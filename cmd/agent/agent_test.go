package agent

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// The agent serves its protocol on --listen, named after the Indexed Job's
// completion index, until its context ends.
func TestTheAgentServesItsPingUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f, _, errOut := cmdutil.TestFactory(ctx, map[string]string{"JOB_COMPLETION_INDEX": "3"})
	done := make(chan error, 1)
	go func() { done <- cmdtest.Execute(f, NewCmdAgent, "--listen", "127.0.0.1:0") }()
	addr := regexp.MustCompile(`listening on (\S+)`)
	var m []string
	for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m = addr.FindStringSubmatch(errOut.String())
	}
	if m == nil || !strings.Contains(errOut.String(), "agent agent-3") {
		t.Fatalf("stderr %q: want the agent named agent-3 and its address", errOut.String())
	}
	resp, err := http.Get("http://" + m[1] + agent.RoutePing)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ping: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the agent ended with %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop on cancel")
	}
}
