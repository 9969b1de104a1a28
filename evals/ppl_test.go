package evals

import (
	"math"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/kernels"
)

// builtin is the reference engine as the endpoint glmbench starts when
// none is given (cmd/target.Builtin).
type builtin struct {
	Engine   *engine.Engine
	Endpoint *endpoints.Endpoint
}

// startBuiltin starts the reference engine (nano) for one test.
func startBuiltin(t *testing.T) *builtin {
	t.Helper()
	e := enginetest.Start(t)
	return &builtin{Engine: e.Engine, Endpoint: &endpoints.Endpoint{
		Name: "builtin", BaseURL: e.BaseURL(), Model: e.ModelName(), Builtin: true,
	}}
}

// forwardLL is the log-likelihood of ids[from:] given ids[:from] under the
// engine's model, run alone on a fresh KV cache: log-softmax of the
// logits, padding ids masked to −Inf as the scheduler masks them.
func forwardLL(e *engine.Engine, ids []int32, from int) float64 {
	cfg := e.Model.Cfg
	kv := model.NewKVCacheNoMTP(cfg, len(ids), 1)
	pages, _ := kv.Alloc(len(ids))
	m := model.New(cfg, e.Model.W, kernels.Default(), kv)
	out := m.Forward([]model.Seq{{Tokens: ids, Pos: 0, Slots: kv.SlotsFor(nil, pages, 0, len(ids)), Logits: model.AllRows}})
	row := make([]float32, cfg.VocabSize)
	ll := 0.0
	for i := from; i < len(ids); i++ {
		copy(row, out.Logits.Row(i-1))
		for j := tokenizer.MinVocabSize; j < len(row); j++ {
			row[j] = float32(math.Inf(-1))
		}
		sampler.LogSoftmax(row, row)
		ll += float64(row[ids[i]])
	}
	return ll
}

func TestPPLEqualsTheEnginesOwnForwardPass(t *testing.T) {
	t.Parallel()
	b := startBuiltin(t)
	docs := SampleDocs()
	long := Doc{Text: strings.Repeat("A short line of text.\n", 40) + "The end.", Source: "test"}
	long.Words, long.Bytes = lmevalWords(long.Text), len(long.Text)
	docs = &Docs{From: "test", Docs: append(append([]Doc(nil), docs.Docs...), long, Doc{Text: "x", Words: 1, Bytes: 1})}
	const window = 128
	// Small tokenization pieces, so documents are tokenized in several
	// echoes and joined, as long ones are.
	res := runEval("ppl", Config{Endpoint: b.Endpoint, Window: window, Concurrency: 4, TokenizeBytes: 300}, docs)
	if res.Status != StatusOK || res.Method != MethodEcho {
		t.Fatalf("%+v", res)
	}

	// The reference: the byte ids, in windows of window−1 prompt ids that
	// end at each block of window−2 scored positions, each run alone.
	var ll float64
	var tokens, words, bytes int
	for _, d := range docs.Docs {
		ids := b.Engine.Tokenizer.Encode(d.Text)
		if len(ids) < 2 {
			continue
		}
		words, bytes = words+d.Words, bytes+d.Bytes
		for lo := 1; lo < len(ids); lo += window - 2 {
			hi := min(lo+window-2, len(ids))
			start := max(0, hi-(window-1))
			ll += forwardLL(b.Engine, ids[start:hi], lo-start)
			tokens += hi - lo
		}
	}
	want := math.Exp(-ll / float64(tokens))
	if got := res.Metrics["ppl"]; math.Abs(got-want) > 1e-4*want {
		t.Errorf("ppl %.6f, want exp(mean nll) of the forward pass %.6f", got, want)
	}
	if res.Metrics["tokens"] != float64(tokens) || res.N != len(docs.Docs)-1 {
		t.Errorf("tokens %v over %d documents, want %d over %d", res.Metrics["tokens"], res.N, tokens, len(docs.Docs)-1)
	}
	nll := -ll / float64(tokens)
	for k, want := range map[string]float64{
		"nll_per_token": nll, "word_perplexity": math.Exp(-ll / float64(words)),
		"byte_perplexity": math.Exp(-ll / float64(bytes)), "bits_per_byte": -ll / float64(bytes) / math.Ln2,
	} {
		if got := res.Metrics[k]; math.Abs(got-want) > 1e-4*math.Abs(want) {
			t.Errorf("%s %v, want %v", k, got, want)
		}
	}
}

func TestWindowsScoreEveryPositionOnceWithinTheBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		n, window int
		want      []Window
	}{
		{"a one-token document has nothing to score", 1, 8, nil},
		{"a two-token document scores its second token", 2, 8, []Window{{0, 1, 2}}},
		{"a document of window−1 tokens fits one request", 7, 8, []Window{{0, 1, 7}}},
		{"one token more opens a second window with a full context", 8, 8, []Window{{0, 1, 7}, {1, 7, 8}}},
		{"full windows carry exactly one token", 13, 8, []Window{{0, 1, 7}, {6, 7, 13}}},
		{"the smallest window scores one token per request", 4, 3, []Window{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Windows(tc.n, tc.window)
			if len(got) != len(tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("%v, want %v", got, tc.want)
				}
			}
		})
	}
	for n := 1; n < 300; n++ {
		for _, w := range []int{3, 4, 17, 128} {
			next := 1
			for _, win := range Windows(n, w) {
				if win.From != next || win.End-win.Start > w-1 || win.Start >= win.From || win.Start < 0 {
					t.Fatalf("n %d window %d: %+v", n, w, Windows(n, w))
				}
				if win.End-win.From == w-2 && win.From-win.Start != 1 {
					t.Fatalf("n %d window %d: full window %+v carries more than one token", n, w, win)
				}
				next = win.End
			}
			if n > 1 && next != n {
				t.Fatalf("n %d window %d: scored up to %d", n, w, next)
			}
		}
	}
}

func TestPPLWithoutTokenIDsScoresTextPieces(t *testing.T) {
	t.Parallel()
	// An endpoint with echo but no token ids (SGLang without /tokenize):
	// the fake's logprobs do not depend on context, so the expected sum is
	// every byte's but each piece's first.
	f := newFakeLM(t, func(f *fakeLM) { f.noTokenIDs = true })
	docs := SampleDocs()
	res := f.run("ppl", Config{Window: 40, Concurrency: 2}, docs)
	if res.Status != StatusOK || res.Method != MethodEchoText {
		t.Fatalf("%+v", res)
	}
	bytesPerToken := 1.0 // the fake tokenizes byte by byte
	size := int(float64(40-1) * bytesPerToken * 0.8)
	ll, n := 0.0, 0
	for _, d := range docs.Docs {
		for _, p := range pieces(d.Text, size) {
			for i := 1; i < len(p); i++ {
				ll += byteLP(p[i])
				n++
			}
		}
	}
	if res.Metrics["tokens"] != float64(n) || math.Abs(res.Metrics["nll_per_token"]+ll/float64(n)) > 1e-9 {
		t.Errorf("metrics %v, want %d tokens of nll %v", res.Metrics, n, -ll/float64(n))
	}
}

func TestPiecesCutAtLineEndsAndKeepEveryByte(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		size       int
	}{
		{"lines", "one line\ntwo line\nthree\n", 10},
		{"a long line is cut at spaces", "aaaa bbbb cccc dddd eeee", 10},
		{"a long word is cut on a rune boundary", strings.Repeat("é", 20), 7},
		{"short text is one piece", "short", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := pieces(tc.text, tc.size)
			if strings.Join(ps, "") != tc.text {
				t.Fatalf("%q does not join back", ps)
			}
			for _, p := range ps {
				if len(p) > tc.size || !utf8Valid(p) {
					t.Fatalf("piece %q of %q", p, ps)
				}
			}
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestPPLTakesTokenIDsWhereverTheServerGivesThem(t *testing.T) {
	t.Parallel()
	// The fake's logprobs do not depend on context, so every mode that
	// scores each text byte once gives the same sum; a server's BOS is
	// context only, and is kept once however a document is cut.
	docs := SampleDocs()
	all, n := 0.0, 0
	for _, d := range docs.Docs {
		for i := range len(d.Text) {
			all += byteLP(d.Text[i])
		}
		n += len(d.Text)
	}
	for _, tc := range []struct {
		name      string
		configure func(f *fakeLM)
		method    string
		bos       bool
	}{
		{"ids from echo", nil, MethodEcho, false},
		{"ids from echo with a BOS", func(f *fakeLM) { f.bos = true }, MethodEcho, true},
		{"ids from /tokenize", func(f *fakeLM) { f.noTokenIDs, f.tokenize = true, true }, MethodEchoTokenize, false},
		{"ids from /tokenize with a BOS", func(f *fakeLM) { f.noTokenIDs, f.tokenize, f.bos = true, true, true }, MethodEchoTokenize, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, tc.configure)
			res := f.run("ppl", Config{Window: 50, Concurrency: 3, TokenizeBytes: 300}, docs)
			if res.Status != StatusOK || res.Method != tc.method {
				t.Fatalf("%+v", res)
			}
			wantLL, wantN := all, n
			if !tc.bos {
				// Without a BOS each document's first byte is context only.
				for _, d := range docs.Docs {
					wantLL -= byteLP(d.Text[0])
					wantN--
				}
			}
			if res.Metrics["tokens"] != float64(wantN) || math.Abs(res.Metrics["nll_per_token"]+wantLL/float64(wantN)) > 1e-9 {
				t.Errorf("metrics %v, want %d tokens of nll %v", res.Metrics, wantN, -wantLL/float64(wantN))
			}
		})
	}
}
