package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/badinput"
)

// listen starts the agent with args and returns its stderr once it says
// where it listens; the agent stops when the test ends.
func listen(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	a := startAgent(t, env, args...)
	t.Cleanup(func() { a.stop(); <-a.done })
	time.Sleep(20 * time.Millisecond) // the warning, if any, follows at once
	return a.errOut.String()
}

// The truth: an agent listening beyond loopback without --token-env warns
// that anyone who reaches it can use it; on loopback, or with a token, it
// does not. The warning never holds the token.
func TestAnAgentWithoutATokenWarnsWhenOthersCanReachIt(t *testing.T) {
	const token = "tok-0123456789abcdef0123456789abcdef"
	env := map[string]string{"GLMBENCH_AGENT_TOKEN": token}
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--listen", ":0"}, true},
		{[]string{"--listen", "127.0.0.1:0"}, false},
		{[]string{"--listen", ":0", "--token-env", "GLMBENCH_AGENT_TOKEN"}, false},
	} {
		errOut := listen(t, env, tc.args...)
		if got := strings.Contains(errOut, "warning: no --token-env"); got != tc.warn {
			t.Errorf("%v: stderr %q; warned %v, want %v", tc.args, errOut, got, tc.warn)
		}
		if strings.Contains(errOut, token) {
			t.Errorf("%v: stderr holds the token", tc.args)
		}
	}
}

// The truth: --token-env naming an unset variable exits 2 before the agent
// listens.
func TestAnAgentsUnsetTokenVariableIsBadInput(t *testing.T) {
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdAgent, "--listen", "127.0.0.1:0", "--token-env", "GLMBENCH_AGENT_TOKEN")
	if !badinput.Is(err) || !strings.Contains(err.Error(), "GLMBENCH_AGENT_TOKEN") || strings.Contains(errOut.String(), "listening") {
		t.Fatalf("err %v, stderr %q; want bad input naming the variable, and no listener", err, errOut.String())
	}
}

// The truth: an agent whose token is its API key would have every
// coordinator send the key over the wire, in plain HTTP, on every request
// (the key never travels otherwise): that is bad input before it listens,
// whether --token-env names the key's variable or another holding the same
// value, and with the key read from --api-key-env or the default
// OPENAI_API_KEY. The error quotes no key.
func TestAnAgentWhoseTokenIsItsAPIKeyIsBadInput(t *testing.T) {
	const key = "sk-0123456789abcdef0123456789abcdef"
	for _, args := range [][]string{
		{"--api-key-env", "OPENAI_API_KEY", "--token-env", "OPENAI_API_KEY"},
		{"--api-key-env", "MY_KEY", "--token-env", "GLMBENCH_AGENT_TOKEN"},
		{"--token-env", "GLMBENCH_AGENT_TOKEN"},
	} {
		env := map[string]string{"OPENAI_API_KEY": key, "MY_KEY": key, "GLMBENCH_AGENT_TOKEN": key + "\n"}
		// An agent that takes the token listens until the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		f, _, errOut := cmdutil.TestFactory(ctx, env)
		err := cmdtest.Execute(f, NewCmdAgent, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
		cancel()
		if !badinput.Is(err) || !strings.Contains(err.Error(), "API key") || strings.Contains(err.Error()+errOut.String(), key) || strings.Contains(errOut.String(), "listening") {
			t.Errorf("%v: err %v, stderr %q; want bad input saying the token is the API key, quoting neither, and no listener", args, err, errOut.String())
		}
	}
}
