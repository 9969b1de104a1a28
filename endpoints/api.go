package endpoints

import (
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// API is the route a run's requests go to: chat (POST /chat/completions,
// a body of messages that the server renders with its chat template) or
// completions (POST /completions, a body whose prompt is sent as it is:
// what a base model without a chat template takes). The zero value is chat.
type API string

// The APIs.
const (
	APIChat        API = "chat"
	APICompletions API = "completions"
)

// ParseAPI reads --api: chat or completions; anything else is bad input.
func ParseAPI(s string) (API, error) {
	switch API(strings.TrimSpace(s)) {
	case APIChat, "":
		return APIChat, nil
	case APICompletions:
		return APICompletions, nil
	}
	return "", badinput.Errorf("--api must be chat or completions, not %q", s)
}

// Name is the API's name, "chat" for the zero value (a report written
// before the field existed was a chat run).
func (a API) Name() string {
	if a == APICompletions {
		return string(APICompletions)
	}
	return string(APIChat)
}

// Path is the API's route, relative to the base URL: "/chat/completions"
// or "/completions".
func (a API) Path() string {
	if a == APICompletions {
		return "/completions"
	}
	return "/chat/completions"
}

// CompletionRequest is the body of POST /completions as glmbench sends it:
// ChatRequest's fields with a prompt for the messages.
type CompletionRequest struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	// IgnoreEOS asks SGLang and vLLM to generate exactly max_tokens.
	IgnoreEOS *bool `json:"ignore_eos,omitempty"`
}

// Transcript is the one prompt a completions request sends for a chat of
// msgs: their contents joined in order with a blank line ("\n\n"), with no
// roles and no template, so that what two chats share at their start stays
// a byte prefix of both prompts (a prefix cache still serves it).
func Transcript(msgs []Message) string {
	switch len(msgs) {
	case 0:
		return ""
	case 1:
		return msgs[0].Content
	}
	n := 2 * (len(msgs) - 1)
	for _, m := range msgs {
		n += len(m.Content)
	}
	var b strings.Builder
	b.Grow(n)
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Content)
	}
	return b.String()
}
