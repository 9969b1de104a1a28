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
