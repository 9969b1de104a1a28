package server

import (
	"math"
	"strconv"

	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
)

// minLogprob replaces a logprob that is not a finite number: JSON has no
// −Infinity or NaN, so a token of probability zero (a masked padding id, or
// a row without a distribution) gets −9999.0, as vLLM clamps it.
const minLogprob = -9999.0

// logprob is a log probability that always encodes as a finite JSON number,
// in float32's shortest form (the engine computes in float32).
type logprob float32

// MarshalJSON writes the number, clamped to minLogprob.
func (l logprob) MarshalJSON() ([]byte, error) {
	v := float64(l)
	if math.IsNaN(v) || math.IsInf(v, 0) || v < minLogprob {
		v = minLogprob
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 32), nil
}

// tokenNamer writes token strings for logprob entries: the tokenizer's
// display string, or `token_id:N` with return_tokens_as_token_ids (vLLM's
// convention, so a client can send back exactly the ids it got).
type tokenNamer struct {
	tok   *tokenizer.Tokenizer
	asIDs bool
}

func (n tokenNamer) name(id int32) string {
	if n.asIDs {
		return "token_id:" + strconv.Itoa(int(id))
	}
	return n.tok.TokenString(id)
}

// bytesOf is the OpenAI `bytes` field: the token's bytes as a list of
// integers (null for a token that stands for none).
func (n tokenNamer) bytesOf(id int32) []int {
	b := n.tok.TokenBytes(id)
	if b == nil {
		return nil
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// chatLogprobs is choices[].logprobs of a chat response.
type chatLogprobs struct {
	Content []chatLogprob `json:"content"`
}

type chatLogprob struct {
	Token       string       `json:"token"`
	Logprob     logprob      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []chatTopLog `json:"top_logprobs"`
}

type chatTopLog struct {
	Token   string  `json:"token"`
	Logprob logprob `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func (n tokenNamer) chat(lps []sched.TokenLogprob) []chatLogprob {
	out := make([]chatLogprob, 0, len(lps))
	for _, lp := range lps {
		e := chatLogprob{Token: n.name(lp.ID), Logprob: logprob(lp.Logprob), Bytes: n.bytesOf(lp.ID), TopLogprobs: []chatTopLog{}}
		for _, t := range lp.Top {
			e.TopLogprobs = append(e.TopLogprobs, chatTopLog{Token: n.name(t.ID), Logprob: logprob(t.Logprob), Bytes: n.bytesOf(t.ID)})
		}
		out = append(out, e)
	}
	return out
}

// completionLogprobs is choices[].logprobs of a legacy completion.
type completionLogprobs struct {
	Tokens        []string     `json:"tokens"`
	TokenLogprobs []*logprob   `json:"token_logprobs"`
	TopLogprobs   []orderedTop `json:"top_logprobs"`
	TextOffset    []int        `json:"text_offset"`
}

// orderedTop is one {token: logprob} object of top_logprobs, keys in rank
// order; nil encodes as null (the first prompt token's).
type orderedTop []topEntry

type topEntry struct {
	key string
	lp  logprob
}

// MarshalJSON writes the object with its keys in rank order.
func (t orderedTop) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	for i, e := range t {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := marshal(e.key)
		if err != nil {
			return nil, err
		}
		b = append(b, k[:len(k)-1]...) // marshal ends with a newline
		b = append(b, ':')
		v, _ := e.lp.MarshalJSON()
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// completion appends tokens ids to dst, with their logprobs (nil: null, the
// first prompt token's) and text offsets.
func (n tokenNamer) completion(dst *completionLogprobs, ids []int32, lps []*sched.TokenLogprob, offsets []int) {
	for i, id := range ids {
		dst.Tokens = append(dst.Tokens, n.name(id))
		dst.TextOffset = append(dst.TextOffset, offsets[i])
		var lp *sched.TokenLogprob
		if i < len(lps) {
			lp = lps[i]
		}
		if lp == nil {
			dst.TokenLogprobs = append(dst.TokenLogprobs, nil)
			dst.TopLogprobs = append(dst.TopLogprobs, nil)
			continue
		}
		v := logprob(lp.Logprob)
		dst.TokenLogprobs = append(dst.TokenLogprobs, &v)
		top := orderedTop{}
		for _, t := range lp.Top {
			top = append(top, topEntry{key: n.name(t.ID), lp: logprob(t.Logprob)})
		}
		dst.TopLogprobs = append(dst.TopLogprobs, top)
	}
}

// pointers returns lps as the pointer list completion takes.
func pointers(lps []sched.TokenLogprob) []*sched.TokenLogprob {
	out := make([]*sched.TokenLogprob, len(lps))
	for i := range lps {
		out[i] = &lps[i]
	}
	return out
}
