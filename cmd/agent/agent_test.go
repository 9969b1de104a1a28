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
	a := startAgent(t, map[string]string{"JOB_COMPLETION_INDEX": "3"}, "--listen", "127.0.0.1:0")
	if !strings.Contains(a.errOut.String(), "agent agent-3") {
		t.Fatalf("stderr %q: want the agent named agent-3", a.errOut.String())
	}
	resp, err := http.Get("http://" + a.addr + agent.RoutePing)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ping: %v %v", resp, err)
	}
	resp.Body.Close()
	a.stop()
	a.waitStopped(t)
}

// startedAgent is an agent command running in a test, from startAgent.
type startedAgent struct {
	addr   string // where it says it listens
	errOut *cmdutil.SyncBuffer
	stop   context.CancelFunc // ends its context, as SIGINT or SIGTERM does
	done   chan error         // Execute's error, once it returns
}

// startAgent runs the agent with args and env and returns it once it says
// where it listens; its context ends when the test does, if not before.
func startAgent(t *testing.T, env map[string]string, args ...string) *startedAgent {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	f, _, errOut := cmdutil.TestFactory(ctx, env)
	a := &startedAgent{errOut: errOut, stop: stop, done: make(chan error, 1)}
	go func() { a.done <- cmdtest.Execute(f, NewCmdAgent, args...) }()
	at := regexp.MustCompile(`listening on (\S+)\n`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := at.FindStringSubmatch(errOut.String()); m != nil {
			a.addr = m[1]
			return a
		}
	}
	t.Fatalf("stderr %q: the agent never said where it listens", errOut.String())
	return nil
}

// waitStopped fails t unless the agent, its context ended, returns nil
// within 10 s.
func (a *startedAgent) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("the agent ended with %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop on cancel")
	}
}
