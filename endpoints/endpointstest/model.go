package endpointstest

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The personalities' model: a deterministic stand-in for a real tokenizer and
// a random-weight model, so calibration can converge on a known count and
// every answer can be recomputed by a test.
//
// Tokens: like a BPE pre-tokenizer, a token is up to RunesPerToken
// non-space runes with the whitespace before them ("the cat" is "the",
// " cat"; "abcdefgh" is "abcd", "efgh"); a run of more than RunesPerToken
// whitespace runes first gives tokens of RunesPerToken spaces, and whitespace
// at the end is a token of its own. So a word of up to four letters is one
// token, as in real tokenizers, and a longer text never counts fewer.
//
// Chat prompts: ChatPromptTokens = ChatOverhead + Σ over messages
// (MessageOverhead + Tokens(content)), the fixed parts standing for a chat
// template's role markers and the assistant header.
//
// Generation: token p of an answer is a word of Vocab chosen by an FNV hash of
// (prompt, seed, choice, p); at temperature 0 it is the first of that
// position's ranked candidates, whose logprobs are −(j+1)·ln 2 for rank j (a
// valid distribution over the first candidates), so "the greedy token is the
// most likely" holds by construction. After a prompt ending in "Answer:" the
// first token's candidates are the letters A–D first (rankedLetters).

// RunesPerToken is how many non-space runes one token holds at most.
const RunesPerToken = 4

// ChatOverhead and MessageOverhead are the chat template's tokens: once per
// prompt, and once per message.
const (
	ChatOverhead    = 3
	MessageOverhead = 4
)

// Vocab is what the model says: short words with their leading space, one
// token each.
var Vocab = []string{" the", " cat", " sat", " on", " a", " mat", " and", " ran", " far", " to", " sea", " sun", " red", " big", " dog", " day",
	" of", " in", " it", " was", " one", " old", " new", " way"}

// eachPiece calls f with the byte bounds of every token of text, in order.
func eachPiece(text string, f func(start, end int)) {
	i := 0
	for i < len(text) {
		// Leading whitespace, at most RunesPerToken runes of it before a word.
		j, spaces := i, 0
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsSpace(r) {
				break
			}
			j += size
			spaces++
			if spaces == RunesPerToken {
				break
			}
		}
		if j == len(text) {
			f(i, j)
			return
		}
		if r, _ := utf8.DecodeRuneInString(text[j:]); unicode.IsSpace(r) {
			f(i, j) // RunesPerToken spaces, and more follow
			i = j
			continue
		}
		k, n := j, 0
		for k < len(text) && n < RunesPerToken {
			r, size := utf8.DecodeRuneInString(text[k:])
			if unicode.IsSpace(r) {
				break
			}
			k += size
			n++
		}
		f(i, k)
		i = k
	}
}

// Tokens is the number of tokens text counts as.
func Tokens(text string) int {
	n := 0
	eachPiece(text, func(int, int) { n++ })
	return n
}

// Pieces cuts text into its tokens; they join back to text.
func Pieces(text string) []string {
	var out []string
	eachPiece(text, func(a, b int) { out = append(out, text[a:b]) })
	return out
}

// ChatPromptTokens is the prompt count of a chat request with these message
// contents.
func ChatPromptTokens(contents []string) int {
	n := ChatOverhead
	for _, c := range contents {
		n += MessageOverhead + Tokens(c)
	}
	return n
}

// vocabIDs gives token pieces stable ids, assigned on first sight (the ids of
// Vocab first), so /tokenize, token-id prompts and return_tokens_as_token_ids
// agree within one server.
type vocabIDs struct {
	mu   sync.Mutex
	ids  map[string]int
	text []string
}

// firstID is the id of the first piece; below it are "special" ids.
const firstID = 1000

func newVocabIDs() *vocabIDs {
	v := &vocabIDs{ids: map[string]int{}}
	for _, w := range Vocab {
		v.id(w)
	}
	return v
}

func (v *vocabIDs) id(piece string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if id, ok := v.ids[piece]; ok {
		return id
	}
	id := firstID + len(v.text)
	v.ids[piece] = id
	v.text = append(v.text, piece)
	return id
}

// piece is the text of id; an id never handed out reads as "<unk>" (one
// token all the same).
func (v *vocabIDs) piece(id int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if i := id - firstID; i >= 0 && i < len(v.text) {
		return v.text[i]
	}
	return "<unk>"
}

func (v *vocabIDs) encode(text string) []int {
	var out []int
	for _, p := range Pieces(text) {
		out = append(out, v.id(p))
	}
	return out
}

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// candidate is one ranked alternative at a position.
type candidate struct {
	Token   string
	Logprob float64
}

// mix combines hashes (splitmix64's finalizer over each step), so a
// prompt is hashed once however many positions follow it.
func mix(h uint64, xs ...uint64) uint64 {
	for _, x := range xs {
		h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// ranked is the model's ranked candidates at position p after a context
// whose hash is ctx: k words of Vocab in an order fixed by the hash, with
// logprob −(j+1)·ln 2.
func ranked(ctx uint64, p, k int) []candidate {
	k = min(max(k, 1), len(Vocab))
	start := int(mix(ctx, uint64(p)) % uint64(len(Vocab)))
	out := make([]candidate, k)
	for j := range out {
		out[j] = candidate{Vocab[(start+j*7)%len(Vocab)], -float64(j+1) * math.Ln2}
	}
	return out
}

// Letters are what the model says first after a prompt that ends in
// "Answer:" (MMLU's question format), so a multiple-choice eval scored from
// the first token's top logprobs or from a greedy answer gets a letter, as
// from a real instruction-following model.
var Letters = []string{" A", " B", " C", " D"}

// rankedLetters is ranked for the first token after "Answer:": the four
// letters first, in an order fixed by the hash, then the words.
func rankedLetters(ctx uint64, k int) []candidate {
	k = min(max(k, 1), len(Letters)+len(Vocab))
	start := int(mix(ctx, 0) % uint64(len(Letters)))
	out := make([]candidate, 0, len(Letters)+len(Vocab))
	for j := range Letters {
		out = append(out, candidate{Letters[(start+j)%len(Letters)], 0})
	}
	for _, w := range ranked(ctx, 0, len(Vocab)) {
		out = append(out, candidate{w.Token, 0})
	}
	for j := range out {
		out[j].Logprob = -float64(j+1) * math.Ln2
	}
	return out[:k]
}

// genToken is one generated token.
type genToken struct {
	Text    string
	Logprob float64
	Top     []candidate
}

// sampling is what decides a generation.
type sampling struct {
	Temperature float64
	Seed        *int64
	// Choice is the index of the choice (n > 1), so choices differ.
	Choice int
	// nonce varies unseeded sampling between requests.
	nonce uint64
}

// generate returns n tokens after prompt, with topK candidates each (0: none).
func generate(prompt string, n, topK int, s sampling) []genToken {
	out := make([]genToken, 0, n)
	ph := hash64(prompt)
	seed := hash64("unseeded", strconv.FormatUint(s.nonce, 10))
	if s.Seed != nil {
		seed = hash64(strconv.FormatInt(*s.Seed, 10))
	}
	answer := strings.HasSuffix(strings.TrimSpace(prompt), "Answer:")
	for p := 0; p < n; p++ {
		c := ranked(ph, p, len(Vocab))
		if p == 0 && answer {
			c = rankedLetters(ph, len(Letters)+len(Vocab))
		}
		pick := 0
		if s.Temperature > 0 {
			// Rank j is drawn with probability 2^−(j+1) (the remainder on the last).
			u := float64(mix(ph, seed, uint64(s.Choice), uint64(p))>>11) / float64(1<<53)
			for acc := 0.5; pick < len(c)-1 && u > acc; pick++ {
				acc += math.Pow(2, -float64(pick+2))
			}
		}
		t := genToken{Text: c[pick].Token, Logprob: c[pick].Logprob}
		if topK > 0 {
			t.Top = c[:min(topK, len(c))]
		}
		out = append(out, t)
	}
	return out
}

// prefixHashes are the context hashes of a prompt's positions: [i] stands
// for pieces[:i], built in one pass.
func prefixHashes(pieces []string) []uint64 {
	out := make([]uint64, len(pieces)+1)
	for i, p := range pieces {
		out[i+1] = mix(out[i], hash64(p))
	}
	return out
}

// promptLogprob is the logprob the model gives a prompt piece after a
// context whose hash is ctx: in [−8, −0.1], never 0 or positive, never clamped.
func promptLogprob(ctx uint64, piece string) float64 {
	return -0.1 - float64(mix(ctx, hash64(piece))%790)/100
}

// stopAt cuts generated tokens at the first stop string: the tokens up to
// and including the one that completes it, the last clipped so the text ends
// just before the stop. ok reports whether a stop was found.
func stopAt(toks []genToken, stops []string) ([]genToken, bool) {
	if len(stops) == 0 {
		return toks, false
	}
	longest := 0
	for _, st := range stops {
		longest = max(longest, len(st))
	}
	var text strings.Builder
	for i, t := range toks {
		before := text.Len()
		text.WriteString(t.Text)
		s := text.String()
		// Only a stop that ends in this token is new: look from where it could start.
		from := max(0, before-longest+1)
		cut := -1
		for _, st := range stops {
			if st == "" {
				continue
			}
			if j := strings.Index(s[from:], st); j >= 0 && (cut < 0 || from+j < cut) {
				cut = from + j
			}
		}
		if cut < 0 {
			continue
		}
		out := append([]genToken(nil), toks[:i+1]...)
		// Clip every token's text to the cut (a stop may start in an earlier token).
		pos := 0
		for k := range out {
			end := pos + len(out[k].Text)
			if k == i {
				end = before + len(t.Text)
			}
			switch {
			case pos >= cut:
				out[k].Text = ""
			case end > cut:
				out[k].Text = out[k].Text[:cut-pos]
			}
			pos = end
		}
		return out, true
	}
	return toks, false
}

func joinText(toks []genToken) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}
