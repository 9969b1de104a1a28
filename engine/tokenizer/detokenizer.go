package tokenizer

import "unicode/utf8"

// Detokenizer turns a stream of token ids into text pieces that are each
// complete, valid UTF-8, for streaming responses. A multi-byte character
// split over byte tokens is held back until its last byte arrives; bytes
// that can no longer become a character come out as U+FFFD at once, so the
// stream never stalls on them. The concatenation of every Add and the final
// Flush equals Decode of the same ids (DecodeSkipSpecial when skipping).
//
// A Detokenizer is for one stream and one goroutine.
type Detokenizer struct {
	tok         *Tokenizer
	skipControl bool
	// pending holds the start of a character whose remaining bytes have not
	// arrived; it never holds more than utf8.UTFMax−1 bytes between calls.
	pending [utf8.UTFMax]byte
	n       int
	// invalid is set when the last thing emitted replaced invalid bytes: a
	// run of invalid bytes gets one U+FFFD, as strings.ToValidUTF8 gives,
	// even when the run spans several Add calls.
	invalid bool
	out     []byte
}

// NewDetokenizer returns a detokenizer for one stream. With skipSpecial the
// control specials (IsControl: [gMASK], <sop>, role tokens, <|endoftext|>)
// are left out, as the OpenAI default skip_special_tokens does; the markup
// specials (<think>, <tool_call> and the rest) always come out as their text.
func (t *Tokenizer) NewDetokenizer(skipSpecial bool) *Detokenizer {
	return &Detokenizer{tok: t, skipControl: skipSpecial}
}

// Add feeds one token and returns the text that is now complete, possibly "".
func (d *Detokenizer) Add(id int32) string {
	d.out = d.out[:0]
	for _, b := range d.tok.visible(id, d.skipControl) {
		d.pending[d.n] = b
		d.n++
		d.drain(false)
	}
	return string(d.out)
}

// Flush ends the stream: it returns the held bytes, which can no longer
// complete, as U+FFFD (or "" when none are held), and resets the
// Detokenizer for a new stream.
func (d *Detokenizer) Flush() string {
	d.out = d.out[:0]
	d.drain(true)
	s := string(d.out)
	d.n, d.invalid = 0, false
	return s
}

// drain emits every character at the front of pending that is decided: a
// complete character, or bytes that cannot start one. Unless final, it
// stops at a valid but incomplete prefix, which more bytes may complete.
// It follows strings.ToValidUTF8 step for step so the streamed text equals
// the decoded whole.
func (d *Detokenizer) drain(final bool) {
	for d.n > 0 {
		p := d.pending[:d.n]
		// FullRune is false only for a valid prefix of a longer encoding; an
		// invalid byte counts as full (it decodes as a width-1 error).
		if !final && !utf8.FullRune(p) {
			return
		}
		r, w := utf8.DecodeRune(p)
		if r == utf8.RuneError && w == 1 {
			if !d.invalid {
				d.out = append(d.out, "\uFFFD"...)
				d.invalid = true
			}
		} else {
			d.out = append(d.out, p[:w]...)
			d.invalid = false
		}
		d.n = copy(d.pending[:], p[w:])
	}
}

// ReasoningSplitter splits a GLM-5 output stream into reasoning and content,
// as SGLang's glm45 reasoning parser does, but on token ids: </think> is one
// special id, so it cannot be split or forged by byte tokens. With thinking
// on, the generation prompt already opened <think>, so every token before the
// first </think> is reasoning and every token after it is content; with
// thinking off, everything is content. <think> and </think> never appear in
// either text (a later pair is dropped too, and everything after the first
// </think> stays content). Both texts are UTF-8-safe as Detokenizer's, and
// reasoning + content equals the decoded ids without the <think>/</think>
// tokens, split at the first </think>.
//
// A ReasoningSplitter is for one stream and one goroutine.
type ReasoningSplitter struct {
	reasoning, content *Detokenizer
	inReasoning        bool
}

// NewReasoningSplitter returns a splitter for one stream. thinking says the
// prompt ended with <think> (enable_thinking, GLM's default); skipSpecial is
// as for NewDetokenizer.
func (t *Tokenizer) NewReasoningSplitter(thinking, skipSpecial bool) *ReasoningSplitter {
	return &ReasoningSplitter{
		reasoning:   t.NewDetokenizer(skipSpecial),
		content:     t.NewDetokenizer(skipSpecial),
		inReasoning: thinking,
	}
}

// InReasoning reports whether the next token would go to reasoning.
func (s *ReasoningSplitter) InReasoning() bool { return s.inReasoning }

// Add feeds one token and returns the reasoning and content text that is now
// complete; at most one of them is non-empty.
func (s *ReasoningSplitter) Add(id int32) (reasoning, content string) {
	switch id {
	case idThinkEnd:
		if s.inReasoning {
			// Reasoning is over: held bytes of it can no longer complete.
			s.inReasoning = false
			return s.reasoning.Flush(), ""
		}
		return "", ""
	case idThink:
		return "", ""
	}
	if s.inReasoning {
		return s.reasoning.Add(id), ""
	}
	return "", s.content.Add(id)
}

// Flush ends the stream and returns what was held back.
func (s *ReasoningSplitter) Flush() (reasoning, content string) {
	return s.reasoning.Flush(), s.content.Flush()
}
