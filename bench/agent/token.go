package agent

import (
	"strings"
	"unicode"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
)

// MinTokenLen is the shortest token an agent or a coordinator takes: it
// guards an API key, so a guessable one is refused (`openssl rand -hex 16`
// makes one of 32).
const MinTokenLen = 16

// ReadToken reads the agent token from the environment variable name,
// for the flag that named it (--token-env, --agents-token-env). The value's
// surrounding white space is dropped on both sides (a Kubernetes Secret
// made with --from-file keeps the file's last newline). A name that is no
// variable's, an unset or empty variable, a value shorter than
// MinTokenLen, or one with a control character or space inside, is bad
// input; no error quotes the value.
func ReadToken(flag, name string, getenv func(string) string) (string, error) {
	if !endpoints.IsEnvName(name) {
		return "", badinput.Errorf("%s %s: want the name of the environment variable that holds the token", flag, endpoints.ShownVar(name))
	}
	// The name is quoted as ShownVar quotes one: a token pasted for it
	// (--token-env "$TOKEN") is a valid name when it starts with a letter.
	shown := endpoints.ShownVar(name)
	tok := strings.TrimSpace(getenv(name))
	switch {
	case tok == "":
		return "", badinput.Errorf("%s %s: the variable is unset or empty", flag, shown)
	case len(tok) < MinTokenLen:
		return "", badinput.Errorf("%s %s: the token has %d characters, fewer than %d (openssl rand -hex 16 makes one)", flag, shown, len(tok), MinTokenLen)
	case strings.ContainsFunc(tok, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		return "", badinput.Errorf("%s %s: the token has a space or control character in it, which an HTTP header cannot carry", flag, shown)
	}
	return tok, nil
}

// answerWindow is how much of a failed answer's text the coordinator reads
// (beside 6 bytes a character of the token, its longest escaped form)
// before it redacts the token and quotes the first 512 bytes: a token that
// starts within it is found whole, so no prefix of one survives the cut.
const answerWindow = 64 << 10

// tokenSecrets is an endpoint whose one secret is token, for its redaction
// (endpoints.Endpoint.RedactBytes finds a secret written back raw, in any
// letter case, JSON-escaped or percent-encoded); nil, which redacts
// nothing, for no token.
func tokenSecrets(token string) (*endpoints.Endpoint, error) {
	if token == "" {
		return nil, nil
	}
	const v = "GLMBENCH_AGENT_TOKEN"
	return endpoints.Resolve(endpoints.Flags{Endpoint: "http://agent.invalid/v1", APIKeyEnv: v, APIKeyEnvSet: true},
		func(string) string { return token })
}
