package server

import (
	"strings"
	"unicode/utf8"

	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/tokenizer"
)

// textKind says where a piece of output text goes in a chat response.
type textKind uint8

const (
	kindContent textKind = iota
	kindReasoning
)

// piece is output text of one kind, released to the client.
type piece struct {
	kind textKind
	text string
}

// outTokens are the generated tokens consumed since the last take: their
// logprobs (when asked) and, for a decoder that keeps them, their ids and
// text offsets.
type outTokens struct {
	ids []int32
	lps []sched.TokenLogprob
	// offsets[i] is where token i's text starts in the whole output text,
	// in characters (Unicode code points, as Python counts OpenAI's
	// text_offset), counted from base.
	offsets []int
}

// len is the number of tokens kept: 0 from a decoder that keeps none.
func (o *outTokens) len() int { return len(o.ids) }

// decoder turns generated tokens into text as a response releases it: the
// streaming detokenizer (or, for chat, the reasoning splitter) makes sure
// no piece splits a UTF-8 character; stop strings are matched on the
// decoded text, and any text that could be the start of one is held back
// until it is decided, so a stream never shows a stop string or text past
// it. A stop string does not span the reasoning/content boundary.
type decoder struct {
	split *tokenizer.ReasoningSplitter // chat
	detok *tokenizer.Detokenizer       // completions
	stops []string
	// minTokens keeps stop strings from matching before this many tokens,
	// as vLLM's min_tokens does.
	minTokens int
	// keepTokens keeps each token's id and text offset in toks: only a
	// completions request with logprobs (tokens, text_offset) reads them.
	keepTokens bool

	held     string // decoded text not yet released: it may start a stop string
	heldKind textKind
	out      []piece
	toks     outTokens
	// chars counts the characters decoded so far, from base (for
	// text_offset); only a decoder that keeps tokens counts them.
	chars int

	n       int    // tokens consumed
	stopped bool   // a stop string matched
	matched string // the stop string that matched
}

func newDecoder(tok *tokenizer.Tokenizer, chat, thinking, skipSpecial bool, stops []string, minTokens int) *decoder {
	d := &decoder{stops: stops, minTokens: minTokens}
	if chat {
		d.split = tok.NewReasoningSplitter(thinking, skipSpecial)
	} else {
		d.detok = tok.NewDetokenizer(skipSpecial)
	}
	return d
}

// add consumes one generated token. textless leaves its text out: the EOS
// or stop token that ended generation is counted and keeps its logprob,
// but is never part of the text (as in SGLang and vLLM).
func (d *decoder) add(id int32, lp *sched.TokenLogprob, textless bool) {
	if d.stopped {
		return
	}
	d.n++
	if d.keepTokens {
		d.toks.ids = append(d.toks.ids, id)
		d.toks.offsets = append(d.toks.offsets, d.chars)
	}
	if lp != nil {
		d.toks.lps = append(d.toks.lps, *lp)
	}
	if textless {
		return
	}
	if d.split != nil {
		r, c := d.split.Add(id)
		d.text(kindReasoning, r)
		d.text(kindContent, c)
		return
	}
	d.text(kindContent, d.detok.Add(id))
}

// finish ends the output: the detokenizer's held bytes and the text held
// for stop strings are released (no stop string can complete any more).
func (d *decoder) finish() {
	if d.stopped {
		return
	}
	if d.split != nil {
		r, c := d.split.Flush()
		d.text(kindReasoning, r)
		d.text(kindContent, c)
	} else {
		d.text(kindContent, d.detok.Flush())
	}
	if !d.stopped {
		d.release(d.heldKind, d.held)
		d.held = ""
	}
}

// text takes newly decoded text, releases what is decided and holds the
// rest.
func (d *decoder) text(kind textKind, s string) {
	if s == "" || d.stopped {
		return
	}
	if d.keepTokens {
		d.chars += utf8.RuneCountInString(s)
	}
	if kind != d.heldKind && d.held != "" {
		d.release(d.heldKind, d.held)
		d.held = ""
	}
	d.heldKind = kind
	d.held += s
	if len(d.stops) == 0 || d.n < d.minTokens {
		d.release(kind, d.held)
		d.held = ""
		return
	}
	// Any match starts inside held: text is released only when no suffix
	// of it could begin a stop string.
	if i, stop := firstMatch(d.held, d.stops); i >= 0 {
		d.release(kind, d.held[:i])
		d.held = ""
		d.stopped, d.matched = true, stop
		return
	}
	k := partialTail(d.held, d.stops)
	d.release(kind, d.held[:len(d.held)-k])
	d.held = d.held[len(d.held)-k:]
}

func (d *decoder) release(kind textKind, s string) {
	if s == "" {
		return
	}
	if n := len(d.out); n > 0 && d.out[n-1].kind == kind {
		d.out[n-1].text += s
		return
	}
	d.out = append(d.out, piece{kind: kind, text: s})
}

// take returns the text released and the tokens consumed since the last
// call.
func (d *decoder) take() ([]piece, outTokens) {
	out, toks := d.out, d.toks
	d.out, d.toks = nil, outTokens{}
	return out, toks
}

// firstMatch returns the index in s of the earliest stop string and which
// one it is (the longest at that index), or −1.
func firstMatch(s string, stops []string) (int, string) {
	best, which := -1, ""
	for _, p := range stops {
		if i := strings.Index(s, p); i >= 0 && (best < 0 || i < best || (i == best && len(p) > len(which))) {
			best, which = i, p
		}
	}
	return best, which
}

// partialTail returns the length of the longest suffix of s that is a
// proper prefix of some pattern: text that may yet become a match. The cut
// it makes is on a character boundary, since a pattern starts with one.
func partialTail(s string, pats []string) int {
	best := 0
	for _, p := range pats {
		for k := min(len(p)-1, len(s)); k > best; k-- {
			if strings.HasSuffix(s, p[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

// stepResult is what one batch of scheduler events did to a request.
type stepResult struct {
	// finish is "stop" or "length" once the output is over, else "".
	finish string
	// matched is the stop string or stop token id that ended it (SGLang's
	// matched_stop), nil when none.
	matched any
	// err, when not nil, ends the request with an error instead: the
	// scheduler's abort reason (queue full, shutdown), see apiErrorOf.
	err error
	// promptLogprobs arrive with the first event when echo asked for them.
	promptLogprobs []*sched.TokenLogprob
	promptTokens   int
	cachedTokens   int
}

// consume feeds a batch of events to d. A stop string that matches ends
// the request at once: the caller aborts the stream so the scheduler frees
// its KV.
func (d *decoder) consume(evs []sched.Event) stepResult {
	var res stepResult
	for _, ev := range evs {
		res.promptTokens = ev.PromptTokens
		res.cachedTokens = ev.CachedTokens
		if ev.PromptLogprobs != nil {
			res.promptLogprobs = ev.PromptLogprobs
		}
		f := ev.Finish
		for i, id := range ev.Tokens {
			var lp *sched.TokenLogprob
			if i < len(ev.Logprobs) {
				lp = &ev.Logprobs[i]
			}
			textless := f != nil && f.Reason == "stop" && f.Matched >= 0 && i == len(ev.Tokens)-1 && id == f.Matched
			d.add(id, lp, textless)
			if d.stopped {
				res.finish, res.matched = "stop", d.matched
				return res
			}
		}
		if f == nil {
			continue
		}
		switch {
		case f.Err != nil:
			res.err = f.Err
		case f.Reason == "abort":
			// Only this package aborts (client gone, stop string), and then
			// it stops reading; an abort it did not ask for is the server's.
			res.err = errServerAbort
		default:
			d.finish()
			res.finish = f.Reason
			if d.stopped {
				res.finish, res.matched = "stop", d.matched
			} else if f.Reason == "stop" && f.Matched >= 0 {
				res.matched = int(f.Matched)
			}
		}
		return res
	}
	return res
}
