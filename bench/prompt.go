package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"

	"github.com/glmbench/glmbench/endpoints"
)

// Prefix is what starts request i's user message: "<nonce>-<i:06d> ".
func Prefix(nonce string, i int) string { return fmt.Sprintf("%s-%06d ", nonce, i) }

// fillerWords are plain English words; the filler is a fixed pseudo-random
// sequence of them, so prompts tokenize like ordinary text under any
// tokenizer and are the same from run to run.
var fillerWords = strings.Fields(`the of and to in is was that for on with as by at from
his her they this which are be have had one not but all were when there can an your what
said each she do how their if will up other about out many then them these so some would
make like him into time has look two more write go see number no way could people my than
first water been call who oil its now find long down day did get come made may part over
new sound take only little work know place year live me back give most very after thing
our just name good sentence man think say great where help through much before line right
too mean old any same tell boy follow came want show also around form three small set put
end does another well large must big even such because turn here why ask went men read need
land different home us move try kind hand picture again change off play spell air away
animal house point page letter mother answer found study still learn should world high
every near add food between own below country plant last school father keep tree never
start city earth eye light thought head under story saw left few while along might close
something seem next hard open example begin life always those both paper together got
group often run important until children side feet car mile night walk white sea began grow
took river four carry state once book hear stop without second later miss idea enough eat
face watch far really almost let above girl sometimes mountain cut young talk soon list
song being leave family river garden window morning evening quiet music bridge winter
summer harbor valley lantern meadow kitchen journey silver copper marble orchard`)

// filler is a deterministic text source that grows on demand.
type filler struct {
	rng  *mrand.Rand
	text strings.Builder
}

func newFiller() *filler { return &filler{rng: mrand.New(mrand.NewPCG(0x676c6d62, 0x656e6368))} }

// Text returns the first n bytes of the filler (n ≥ 0). The filler is ASCII,
// so any cut is valid text.
func (f *filler) Text(n int) string {
	for f.text.Len() < n {
		w := fillerWords[f.rng.IntN(len(fillerWords))]
		if f.text.Len() > 0 {
			if f.rng.IntN(14) == 0 {
				f.text.WriteString(". ")
			} else {
				f.text.WriteByte(' ')
			}
		}
		f.text.WriteString(w)
	}
	return f.text.String()[:n]
}

// Words returns the filler's first n bytes (n ≥ 0) cut to whole words: at
// the word boundary nearest n, so that whatever follows cannot merge with a
// cut word into another token. The same n gives the same text, so a shared
// part tokenizes identically every time.
func (f *filler) Words(n int) string {
	if n == 0 {
		return ""
	}
	s := f.Text(n + 32)
	back := strings.LastIndexByte(s[:n+1], ' ')
	fwd := strings.IndexByte(s[n:], ' ')
	cut := back
	if fwd >= 0 && (back < 0 || fwd < n-back) {
		cut = n + fwd
	}
	if cut <= 0 {
		return ""
	}
	return strings.TrimRight(s[:cut], ".")
}

// Shape is what every request body of a run has in common.
type Shape struct {
	Model     string
	IgnoreEOS bool
	// API is the route every request of the run goes to, its probes'
	// included: chat (the zero value) or completions, whose prompt is the
	// chat's transcript (endpoints.Transcript).
	API endpoints.API
	// NoStreamUsage leaves stream_options out of streamed bodies, for
	// servers that refuse the field (Mistral's API: 422 extra_forbidden;
	// Fireworks did in 2024). n then comes from usage where the server
	// sends it anyway, else from counted content events (n_source), and
	// calibration asks for usage without streaming.
	NoStreamUsage bool
	// MaxCompletionTokens sends a chat's output cap as
	// max_completion_tokens instead of max_tokens (OpenAI's reasoning
	// models refuse max_tokens). Completions always send max_tokens.
	MaxCompletionTokens bool
	// Extra is --extra-body: fields added to every body (the probes'
	// too), a JSON object from endpoints.ParseExtraBody(LoadFields); nil
	// for none.
	Extra json.RawMessage `json:",omitempty"`
}

// LoadFields are the body fields the load writes itself, each with what
// sets it instead; --extra-body may not set them (ParseExtraBody).
var LoadFields = map[string]string{
	"model":                 "--model names the model",
	"messages":              "the phase or workload makes the prompt",
	"prompt":                "the phase or workload makes the prompt",
	"stream":                "every request streams",
	"stream_options":        "--stream-usage sets it",
	"max_tokens":            "the phase's OUT is the cap, sent as max_tokens (or as max_completion_tokens with --max-completion-tokens)",
	"max_completion_tokens": "the phase's OUT is the cap, sent as max_completion_tokens with --max-completion-tokens",
	"ignore_eos":            "--ignore-eos sets it",
	"n_predict":             "llama.cpp reads it before max_tokens, so it would replace the phase's OUT as the cap",
	"n":                     "a request is measured by its one choice",
	"echo":                  "a streamed echo sends the prompt back as content, which TTFT would time",
}

// overhead names what a prompt holds besides its filler, for messages
// about the smallest prompt: the chat template and the prefix, or on
// completions the prefix alone.
func (s Shape) overhead() string {
	if s.API == endpoints.APICompletions {
		return "prefix, no chat template"
	}
	return "chat template and prefix"
}

// turnOverhead names, for messages about a multi-turn history, what it
// holds besides its text, and what each turn adds besides its user text.
func (s Shape) turnOverhead() (included, perTurn string) {
	if s.API == endpoints.APICompletions {
		return "prefixes and the blank lines between turns included, no chat template", "a turn's prefix and blank lines"
	}
	return "chat template and prefixes included", "the template's tokens a turn"
}

// questionOverhead names what a shared-prefix question holds besides its
// text, for the message about a question over its target.
func (s Shape) questionOverhead() string {
	if s.API == endpoints.APICompletions {
		return "the question's prefix and the blank line before it"
	}
	return "the question's template and prefix"
}

// chatBody builds the JSON body of a streamed request whose user message
// (or, for completions, prompt) is prefix + text. The load and its probes
// share this one builder, so a probe has exactly the load's shape.
func (s Shape) chatBody(prefix, text string, maxTokens int, stream bool) []byte {
	return s.messagesBody([]endpoints.Message{{Role: "user", Content: prefix + text}}, maxTokens, stream)
}

// messagesBody builds the JSON body of a request of msgs: the one builder
// of every body the load and its probes send. For chat the messages go as
// they are; for completions their transcript is the prompt, with no
// template, so its tokens are the raw text's.
func (s Shape) messagesBody(msgs []endpoints.Message, maxTokens int, stream bool) []byte {
	var opts *endpoints.StreamOptions
	if stream && !s.NoStreamUsage {
		opts = &endpoints.StreamOptions{IncludeUsage: true}
	}
	var ignore *bool
	if s.IgnoreEOS {
		t := true
		ignore = &t
	}
	chat := endpoints.ChatRequest{Model: s.Model, Messages: msgs, MaxTokens: maxTokens, Stream: stream, StreamOptions: opts, IgnoreEOS: ignore}
	if s.MaxCompletionTokens {
		chat.MaxTokens, chat.MaxCompletionTokens = 0, maxTokens
	}
	var req any = chat
	if s.API == endpoints.APICompletions {
		req = endpoints.CompletionRequest{Model: s.Model, Prompt: endpoints.Transcript(msgs), MaxTokens: maxTokens, Stream: stream, StreamOptions: opts, IgnoreEOS: ignore}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err) // strings and ints always marshal
	}
	return endpoints.WithExtra(b, s.Extra)
}

// template makes the request bodies of a phase from one marshalled body,
// patching only the six index digits of each prefix: the same bytes in a
// chat body's user message and a completions body's prompt.
type template struct {
	b  []byte
	at int // offset of the index digits in b
}

func newTemplate(s Shape, nonce, text string, maxTokens int) template {
	b := s.chatBody(Prefix(nonce, 0), text, maxTokens, true)
	at := bytes.Index(b, []byte(Prefix(nonce, 0)))
	if at < 0 {
		panic("bench: prefix not found in body template")
	}
	return template{b: b, at: at + len(nonce) + 1}
}

// body returns request i's body (0 ≤ i < 1,000,000).
func (t template) body(i int) []byte {
	b := bytes.Clone(t.b)
	for k := t.at + 5; k >= t.at; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	return b
}
