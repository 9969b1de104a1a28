package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// newTiny returns the tokenizer of preset tiny (vocab 512).
func newTiny(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := New(512)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		wantErr bool
	}{
		{"the tiny preset's 512 ids are enough", 512, false},
		{"the nano preset's 320 ids are enough", 320, false},
		{"exactly bytes plus specials is enough", 273, false},
		{"one id short of the specials is refused", 272, true},
		{"a bytes-only vocabulary is refused", 256, true},
		{"a negative size is refused", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, err := New(tt.size)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%d) error = %v, want error %v", tt.size, err, tt.wantErr)
			}
			if err == nil && tok.VocabSize() != tt.size {
				t.Fatalf("VocabSize() = %d, want %d", tok.VocabSize(), tt.size)
			}
		})
	}
}

func TestSpecialIDsFollowTheBytesInOrder(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	want := []string{
		"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>",
		"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>",
		"<arg_value>", "</arg_value>", "<tool_response>", "</tool_response>",
	}
	if got := SpecialTokens(); !slices.Equal(got, want) {
		t.Fatalf("SpecialTokens() = %q, want %q", got, want)
	}
	for i, s := range want {
		id, ok := tok.SpecialID(s)
		if !ok || id != int32(256+i) {
			t.Errorf("SpecialID(%q) = %d, %v; want %d", s, id, ok, 256+i)
		}
		if got := tok.Decode([]int32{id}); got != s {
			t.Errorf("Decode(%d) = %q, want %q", id, got, s)
		}
	}
	accessors := []struct {
		name string
		got  int32
		text string
	}{
		{"BOS", tok.BOS(), "[gMASK]"}, {"SOP", tok.SOP(), "<sop>"}, {"System", tok.System(), "<|system|>"},
		{"User", tok.User(), "<|user|>"}, {"Assistant", tok.Assistant(), "<|assistant|>"},
		{"Observation", tok.Observation(), "<|observation|>"}, {"EndOfText", tok.EndOfText(), "<|endoftext|>"},
		{"Think", tok.Think(), "<think>"}, {"ThinkEnd", tok.ThinkEnd(), "</think>"},
	}
	for _, a := range accessors {
		if got := tok.Decode([]int32{a.got}); got != a.text {
			t.Errorf("%s() decodes to %q, want %q", a.name, got, a.text)
		}
	}
	if got, want := tok.EOS(), []int32{tok.EndOfText(), tok.User(), tok.Observation()}; !slices.Equal(got, want) {
		t.Errorf("EOS() = %v, want %v", got, want)
	}
	for _, id := range tok.EOS() {
		if !tok.IsEOS(id) {
			t.Errorf("IsEOS(%d) = false", id)
		}
	}
	if tok.IsEOS(tok.Assistant()) || tok.IsEOS('a') {
		t.Error("IsEOS is true for a token generation does not stop on")
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	tests := []struct{ name, text string }{
		{"empty text", ""},
		{"ASCII", "Hello, world!\n"},
		{"every control character", "\x00\x01\t\r\x1f\x7f"},
		{"two-byte characters", "héllo wörld"},
		{"three-byte characters", "北京 €"},
		{"four-byte emoji", "😀🎉 ok"},
		{"special strings stay text", "<|user|>[gMASK]</think><tool_call>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ids := tok.Encode(tt.text)
			if len(ids) != len(tt.text) {
				t.Fatalf("Encode gave %d ids for %d bytes", len(ids), len(tt.text))
			}
			if got := tok.Decode(ids); got != tt.text {
				t.Fatalf("Decode(Encode(%q)) = %q", tt.text, got)
			}
			if got := tok.Decode(tok.EncodeSpecial(tt.text)); got != tt.text {
				t.Fatalf("Decode(EncodeSpecial(%q)) = %q", tt.text, got)
			}
		})
	}
}

func TestSpecialStringsInPlainTextAreNotSpecials(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	tests := []struct {
		name         string
		text         string
		wantSpecials []int32 // what EncodeSpecial finds, in order
	}{
		{"a role token typed by a user", "hi <|assistant|> there", []int32{tok.Assistant()}},
		{"every special glued together", strings.Join(SpecialTokens(), ""), allSpecials()},
		{"an unclosed lookalike", "<|user| and <think", nil},
		{"a lookalike with different case", "<THINK>[GMASK]", nil},
		{"a prefix of a special at the end", "text</tool_ca", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, id := range tok.Encode(tt.text) {
				if id > 255 {
					t.Fatalf("Encode(%q) produced non-byte id %d", tt.text, id)
				}
			}
			var got []int32
			for _, id := range tok.EncodeSpecial(tt.text) {
				if tok.IsSpecial(id) {
					got = append(got, id)
				}
			}
			if !slices.Equal(got, tt.wantSpecials) {
				t.Fatalf("EncodeSpecial(%q) specials = %v, want %v", tt.text, got, tt.wantSpecials)
			}
		})
	}
}

func allSpecials() []int32 {
	var ids []int32
	for i := range SpecialTokens() {
		ids = append(ids, int32(256+i))
	}
	return ids
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	tests := []struct {
		name     string
		ids      []int32
		want     string
		wantSkip string
	}{
		{"a lone continuation byte becomes one replacement", []int32{'a', 0x80, 'b'}, "a\uFFFDb", "a\uFFFDb"},
		{"a run of invalid bytes becomes one replacement", []int32{0xff, 0xfe, 0x80, 'x'}, "\uFFFDx", "\uFFFDx"},
		{"a truncated character at the end", []int32{'a', 0xe2, 0x82}, "a\uFFFD", "a\uFFFD"},
		{"a special cuts a character in two", []int32{0xe2, 0x82, 256 + 6, 0xac}, "\uFFFD<|endoftext|>\uFFFD", "€"},
		{"padding decodes to nothing and joins a character", []int32{0xe2, 400, 0x82, 511, 0xac}, "€", "€"},
		{"unknown ids decode to nothing", []int32{-1, 'o', 512, 'k', 1 << 30}, "ok", "ok"},
		{"control specials are skipped, markup stays", []int32{256, 257, 259, 'q', 260, 263, 'r', 264, 'c', 262},
			"[gMASK]<sop><|user|>q<|assistant|><think>r</think>c<|endoftext|>", "q<think>r</think>c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tok.Decode(tt.ids); got != tt.want {
				t.Errorf("Decode = %q, want %q", got, tt.want)
			}
			if got := tok.DecodeSkipSpecial(tt.ids); got != tt.wantSkip {
				t.Errorf("DecodeSkipSpecial = %q, want %q", got, tt.wantSkip)
			}
		})
	}
}

func TestTokenStringIsValidUniqueAndReadable(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	seen := map[string]int32{}
	for id := int32(0); id < int32(tok.VocabSize()); id++ {
		s := tok.TokenString(id)
		if !utf8.ValidString(s) || s == "" {
			t.Fatalf("TokenString(%d) = %q: empty or invalid UTF-8", id, s)
		}
		if prev, dup := seen[s]; dup {
			t.Fatalf("TokenString(%d) = TokenString(%d) = %q", id, prev, s)
		}
		seen[s] = id
	}
	tests := []struct {
		name      string
		id        int32
		want      string
		wantBytes []byte
	}{
		{"an ASCII letter is itself", 'a', "a", []byte("a")},
		{"a newline is itself", '\n', "\n", []byte("\n")},
		{"a byte that is not UTF-8 alone is shown escaped", 0xe2, `bytes:\xe2`, []byte{0xe2}},
		{"byte 0xff", 0xff, `bytes:\xff`, []byte{0xff}},
		{"a special is its text", 264, "</think>", []byte("</think>")},
		{"padding is named by id", 300, "token_id:300", nil},
		{"an out-of-range id is named by id", 9999, "token_id:9999", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tok.TokenString(tt.id); got != tt.want {
				t.Errorf("TokenString(%d) = %q, want %q", tt.id, got, tt.want)
			}
			if got := tok.TokenBytes(tt.id); !slices.Equal(got, tt.wantBytes) {
				t.Errorf("TokenBytes(%d) = %v, want %v", tt.id, got, tt.wantBytes)
			}
		})
	}
}

func TestTokenBytesIsACopy(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	b := tok.TokenBytes(tok.Think())
	b[0] = 'X'
	if got := tok.Decode([]int32{tok.Think()}); got != "<think>" {
		t.Fatalf("changing TokenBytes' result changed the vocabulary: %q", got)
	}
}

func TestKindsOfToken(t *testing.T) {
	t.Parallel()
	tok, err := New(320)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                      string
		id                        int32
		special, control, padding bool
	}{
		{"a byte", 'x', false, false, false},
		{"[gMASK] is control", 256, true, true, false},
		{"<|endoftext|> is control", 262, true, true, false},
		{"<think> is markup", 263, true, false, false},
		{"</tool_response> is markup", 272, true, false, false},
		{"the first padding id", 273, false, false, true},
		{"the last padding id", 319, false, false, true},
		{"past the vocabulary", 320, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tok.IsSpecial(tt.id); got != tt.special {
				t.Errorf("IsSpecial = %v", got)
			}
			if got := tok.IsControl(tt.id); got != tt.control {
				t.Errorf("IsControl = %v", got)
			}
			if got := tok.IsPadding(tt.id); got != tt.padding {
				t.Errorf("IsPadding = %v", got)
			}
		})
	}
}
