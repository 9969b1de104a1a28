package agent

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

// The truth: the token itself given where its variable's name goes
// (--token-env "$GLMBENCH_AGENT_TOKEN", a slip as easy as it is common)
// is not quoted back: a hex token that starts with a letter is a valid
// variable name, so the error is the unset variable's, and it used to
// print the name, the token, whole on stderr (a pod's log). It is still
// bad input naming the flag.
func TestATokenGivenForItsVariablesNameIsNotQuoted(t *testing.T) {
	const tok = "deadbeef0123456789abcdef01234567" // openssl rand -hex 16
	getenv := func(string) string { return "" }
	for _, flag := range []string{"--token-env", "--agents-token-env"} {
		_, err := ReadToken(flag, tok, getenv)
		if err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), flag+" ") || strings.Contains(err.Error(), tok[4:]) {
			t.Errorf("%s %.4s…: %v; want bad input naming the flag, quoting no more than the token's first 4 characters", flag, tok, err)
		}
	}
}
