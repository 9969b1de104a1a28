// Package tokenizer is the reference engine's byte-level GLM tokenizer.
//
// # Vocabulary
//
// Ids 0–255 are the raw bytes. Ids 256–272 are the GLM-4.7/GLM-5 special
// tokens, in this fixed order: [gMASK], <sop>, <|system|>, <|user|>,
// <|assistant|>, <|observation|>, <|endoftext|>, <think>, </think>,
// <tool_call>, </tool_call>, <arg_key>, </arg_key>, <arg_value>,
// </arg_value>, <tool_response>, </tool_response>. Ids from 273 to
// VocabSize−1 pad the vocabulary to the model's size (512 for preset tiny,
// 320 for nano); they are never produced by encoding and decode to nothing.
// The real GLM vocabulary has 154880 entries and BPE merges; a toy model with
// random weights needs neither, only the same kinds of token.
//
// # Control and markup specials
//
// The specials come in two kinds, as in GLM's tokenizer_config.json, where
// only the first kind is marked "special": the control tokens ([gMASK],
// <sop>, the four role tokens and <|endoftext|>) frame the conversation and
// are hidden when a caller skips special tokens (the OpenAI default); the
// markup tokens (<think> … </tool_response>) carry the reasoning and
// tool-call structure, so they stay in decoded text, where the reasoning
// splitter and the tool-call parser find them.
//
// # Untrusted text
//
// Encode never turns the text of a special token into its id: a user who
// types "<|assistant|>" gets the bytes, not a role switch. Only EncodeSpecial
// (for template text written by this package) does. ApplyChatTemplate
// encodes every piece of client-supplied text (message content, reasoning,
// tool names, arguments and definitions) with Encode, unlike a Hugging Face
// tokenizer that re-reads the whole rendered prompt; see RenderChatTemplate.
//
// A Tokenizer is immutable and safe for concurrent use. Detokenizer and
// ReasoningSplitter hold per-stream state and are not.
package tokenizer

import (
	"fmt"
	"strings"
)

// NumByteTokens is the number of byte tokens: ids 0–255 are the bytes 0x00–0xFF.
const NumByteTokens = 256

// Ids of the special tokens. They follow the byte tokens in a fixed order,
// so they are the same for every vocabulary size.
const (
	idGMask int32 = NumByteTokens + iota
	idSop
	idSystem
	idUser
	idAssistant
	idObservation
	idEndOfText
	idThink
	idThinkEnd
	idToolCall
	idToolCallEnd
	idArgKey
	idArgKeyEnd
	idArgValue
	idArgValueEnd
	idToolResponse
	idToolResponseEnd
	idFirstPadding // first id past the specials: padding starts here
)

// specialTexts holds the text of each special token, indexed by id − NumByteTokens.
var specialTexts = [...]string{
	"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>",
	"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>",
	"<arg_value>", "</arg_value>", "<tool_response>", "</tool_response>",
}

// MinVocabSize is the smallest vocabulary that holds the bytes and the
// specials (273). Ids from MinVocabSize up are padding.
const MinVocabSize = NumByteTokens + len(specialTexts)

// SpecialTokens returns the texts of the special tokens in id order; the
// first has id NumByteTokens.
func SpecialTokens() []string {
	return append([]string(nil), specialTexts[:]...)
}

// Tokenizer maps text to token ids and back. Build it with New.
type Tokenizer struct {
	vocabSize int
	// bytes[id] is what the token stands for in decoded text: one byte, the
	// special's text, or nil for padding.
	bytes [][]byte
	// strs[id] is the token's display string for logprob entries (TokenString).
	strs []string
}

// New returns a tokenizer whose vocabulary has vocabSize ids: the 256 bytes,
// the 17 GLM specials, and padding up to vocabSize. It refuses a vocabulary
// smaller than MinVocabSize.
func New(vocabSize int) (*Tokenizer, error) {
	if vocabSize < MinVocabSize {
		return nil, fmt.Errorf("tokenizer: vocab size %d is below %d (256 bytes + %d GLM specials)",
			vocabSize, MinVocabSize, len(specialTexts))
	}
	t := &Tokenizer{
		vocabSize: vocabSize,
		bytes:     make([][]byte, vocabSize),
		strs:      make([]string, vocabSize),
	}
	for id := range vocabSize {
		switch {
		case id < NumByteTokens:
			t.bytes[id] = []byte{byte(id)}
			t.strs[id] = byteTokenString(byte(id))
		case id < MinVocabSize:
			s := specialTexts[id-NumByteTokens]
			t.bytes[id] = []byte(s)
			t.strs[id] = s
		default:
			t.strs[id] = idTokenString(int32(id))
		}
	}
	return t, nil
}

// byteTokenString is the logprob display string of a byte token. An ASCII
// byte is itself (valid UTF-8). A byte 0x80–0xFF is never valid UTF-8 on its
// own, so it is shown as the 9 ASCII characters `bytes:\xNN` (lower-case
// hex), as vLLM shows undecodable byte tokens; the exact bytes travel in the
// OpenAI `bytes` field (TokenBytes).
func byteTokenString(b byte) string {
	if b < 0x80 {
		return string(rune(b))
	}
	return fmt.Sprintf(`bytes:\x%02x`, b)
}

// idTokenString is the logprob display string of a padding or unknown id,
// vLLM's `token_id:N`, so that no two ids share a top_logprobs key.
func idTokenString(id int32) string {
	return fmt.Sprintf("token_id:%d", id)
}

// VocabSize is the number of ids, padding included (the model's vocab_size).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// BOS is the id of [gMASK], the first token of every GLM prompt.
func (t *Tokenizer) BOS() int32 { return idGMask }

// SOP is the id of <sop>, which follows [gMASK].
func (t *Tokenizer) SOP() int32 { return idSop }

// System is the id of the <|system|> role token.
func (t *Tokenizer) System() int32 { return idSystem }

// User is the id of the <|user|> role token; generation stops on it.
func (t *Tokenizer) User() int32 { return idUser }

// Assistant is the id of the <|assistant|> role token.
func (t *Tokenizer) Assistant() int32 { return idAssistant }

// Observation is the id of <|observation|>, which opens tool results;
// generation stops on it (the model waits for the tool).
func (t *Tokenizer) Observation() int32 { return idObservation }

// EndOfText is the id of <|endoftext|>; generation stops on it.
func (t *Tokenizer) EndOfText() int32 { return idEndOfText }

// Think is the id of <think>, which opens reasoning.
func (t *Tokenizer) Think() int32 { return idThink }

// ThinkEnd is the id of </think>, which closes reasoning.
func (t *Tokenizer) ThinkEnd() int32 { return idThinkEnd }

// EOS returns the ids generation stops on, as GLM-5's generation_config eos
// list: <|endoftext|>, <|user|>, <|observation|>. The slice is new on each call.
func (t *Tokenizer) EOS() []int32 { return []int32{idEndOfText, idUser, idObservation} }

// IsEOS reports whether generation stops on id.
func (t *Tokenizer) IsEOS(id int32) bool {
	return id == idEndOfText || id == idUser || id == idObservation
}

// SpecialID returns the id of the special token whose text is s.
func (t *Tokenizer) SpecialID(s string) (int32, bool) {
	for i, sp := range specialTexts {
		if sp == s {
			return NumByteTokens + int32(i), true
		}
	}
	return 0, false
}

// IsSpecial reports whether id is one of the 17 GLM specials.
func (t *Tokenizer) IsSpecial(id int32) bool { return id >= NumByteTokens && id < idFirstPadding }

// IsControl reports whether id is a control special ([gMASK], <sop>, a role
// token or <|endoftext|>): the specials that skipping special tokens hides.
func (t *Tokenizer) IsControl(id int32) bool { return id >= idGMask && id <= idEndOfText }

// IsPadding reports whether id is a padding id (MinVocabSize ≤ id < VocabSize).
func (t *Tokenizer) IsPadding(id int32) bool {
	return id >= idFirstPadding && int(id) < t.vocabSize
}

// Encode returns the byte ids of text. Special-token texts in it stay bytes.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)), text)
}

// AppendEncode appends the byte ids of text to dst and returns it, as Encode.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	for i := 0; i < len(text); i++ {
		dst = append(dst, int32(text[i]))
	}
	return dst
}

// EncodeSpecial returns the ids of text with every special-token text turned
// into its id and the rest into bytes. Use it for trusted template text only.
func (t *Tokenizer) EncodeSpecial(text string) []int32 {
	return t.appendEncodeSpecial(make([]int32, 0, len(text)), text)
}

func (t *Tokenizer) appendEncodeSpecial(dst []int32, text string) []int32 {
	for i := 0; i < len(text); {
		if id, n := matchSpecial(text[i:]); n > 0 {
			dst = append(dst, id)
			i += n
			continue
		}
		dst = append(dst, int32(text[i]))
		i++
	}
	return dst
}

// matchSpecial returns the id and length of the special token that s starts
// with, or n = 0. No special's text is a prefix of another's, so the first
// match is the only one.
func matchSpecial(s string) (id int32, n int) {
	if s == "" || (s[0] != '<' && s[0] != '[') {
		return 0, 0
	}
	for i, sp := range specialTexts {
		if strings.HasPrefix(s, sp) {
			return NumByteTokens + int32(i), len(sp)
		}
	}
	return 0, 0
}

// Decode returns the text of ids: byte tokens concatenated, specials as their
// text, padding and out-of-range ids as nothing. Bytes that are not valid
// UTF-8 are replaced as strings.ToValidUTF8(s, "\uFFFD") does: one U+FFFD per
// run of invalid bytes.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.decode(ids, false)
}

// DecodeSkipSpecial is Decode with the control specials (IsControl) left out,
// as the OpenAI default skip_special_tokens does; markup specials stay. The
// bytes on either side of a skipped token join as if it were absent.
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	return t.decode(ids, true)
}

func (t *Tokenizer) decode(ids []int32, skipControl bool) string {
	var buf []byte
	for _, id := range ids {
		buf = append(buf, t.visible(id, skipControl)...)
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD")
}

// visible returns the bytes id contributes to decoded text: nothing for
// padding, unknown ids, and control specials when skipControl is set.
func (t *Tokenizer) visible(id int32, skipControl bool) []byte {
	if id < 0 || int(id) >= t.vocabSize || (skipControl && t.IsControl(id)) {
		return nil
	}
	return t.bytes[id]
}

// TokenBytes returns the bytes token id stands for (one byte, a special's
// text, or nil for padding and unknown ids), for the OpenAI logprob `bytes`
// field. The slice is a copy.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	b := t.visible(id, false)
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// TokenString returns the display string of token id for OpenAI logprob
// entries (`token`, the keys of `top_logprobs`). It is always valid UTF-8 and
// distinct for distinct ids: an ASCII byte token is that character, a byte
// token 0x80–0xFF is `bytes:\xNN` (e.g. `bytes:\xe2`), a special is its text,
// and a padding or unknown id is `token_id:N`.
func (t *Tokenizer) TokenString(id int32) string {
	if id < 0 || int(id) >= t.vocabSize {
		return idTokenString(id)
	}
	return t.strs[id]
}

// The special ids and their texts must stay in step.
var _ [MinVocabSize - int(idFirstPadding)]struct{} = [int(idFirstPadding) - MinVocabSize]struct{}{}
