package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// stream feeds ids through d and returns every piece Add and Flush gave.
func stream(t testing.TB, d *Detokenizer, ids []int32) []string {
	t.Helper()
	var pieces []string
	for _, id := range ids {
		pieces = append(pieces, d.Add(id))
	}
	return append(pieces, d.Flush())
}

func checkPieces(t testing.TB, pieces []string, want string) {
	t.Helper()
	for i, p := range pieces {
		if !utf8.ValidString(p) {
			t.Fatalf("piece %d = %q is not valid UTF-8", i, p)
		}
	}
	if got := strings.Join(pieces, ""); got != want {
		t.Fatalf("streamed %q (pieces %q), want %q", got, pieces, want)
	}
}

func TestDetokenizerHoldsBackSplitCharacters(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	texts := []struct{ name, text string }{
		{"two-byte characters", "aé"},
		{"three-byte characters", "北京€"},
		{"a four-byte emoji", "😀"},
		{"emoji beside ASCII and accents", "x😀é🎉北!"},
	}
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ids := tok.Encode(tt.text)
			// Byte by byte, the text out so far is always the longest
			// prefix of whole characters: nothing broken, nothing late.
			d := tok.NewDetokenizer(false)
			var out strings.Builder
			for i, id := range ids {
				piece := d.Add(id)
				if !utf8.ValidString(piece) {
					t.Fatalf("after byte %d: piece %q is not valid UTF-8", i, piece)
				}
				out.WriteString(piece)
				if want := wholeCharPrefix(tt.text[:i+1]); out.String() != want {
					t.Fatalf("after byte %d: out %q, want %q", i, out.String(), want)
				}
			}
			if rest := d.Flush(); rest != "" || out.String() != tt.text {
				t.Fatalf("out %q + flush %q, want %q", out.String(), rest, tt.text)
			}
			// A special token at every split point: the stream still equals
			// Decode, which gives U+FFFD where it cuts a character (or joins
			// the character when the special is skipped).
			for cut := 0; cut <= len(ids); cut++ {
				for _, special := range []int32{tok.User(), tok.Think(), 400} {
					with := append(append(append([]int32{}, ids[:cut]...), special), ids[cut:]...)
					checkPieces(t, stream(t, tok.NewDetokenizer(false), with), tok.Decode(with))
					checkPieces(t, stream(t, tok.NewDetokenizer(true), with), tok.DecodeSkipSpecial(with))
				}
			}
		})
	}
}

// wholeCharPrefix returns s without a trailing incomplete character.
func wholeCharPrefix(s string) string {
	for n := 1; n < utf8.UTFMax && n <= len(s); n++ {
		if utf8.RuneStart(s[len(s)-n]) {
			if !utf8.FullRuneInString(s[len(s)-n:]) {
				return s[:len(s)-n]
			}
			break
		}
	}
	return s
}

func TestDetokenizerInvalidBytes(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	tests := []struct {
		name string
		ids  []int32
		want []string // each Add's piece, then Flush's
	}{
		{"a lone continuation byte is replaced at once", []int32{0x80, 'a'}, []string{"\uFFFD", "a", ""}},
		{"a run of invalid bytes over several adds is one replacement", []int32{0xff, 0xfe, 0xc0, 'a'}, []string{"\uFFFD", "", "", "a", ""}},
		{"a character cut by ASCII is replaced when the ASCII comes", []int32{0xe2, 0x82, 'a'}, []string{"", "", "\uFFFDa", ""}},
		{"a truncated emoji is replaced at the flush", []int32{'x', 0xf0, 0x9f, 0x98}, []string{"x", "", "", "", "\uFFFD"}},
		{"a truncated emoji before a whole one", []int32{0xf0, 0x9f, 0xf0, 0x9f, 0x98, 0x80}, []string{"", "", "\uFFFD", "", "", "😀", ""}},
		{"a surrogate encoding is invalid as soon as it shows", []int32{0xed, 0xa0, 0x80}, []string{"", "\uFFFD", "", ""}},
		{"an overlong encoding is invalid", []int32{0xc0, 0xaf}, []string{"\uFFFD", "", ""}},
		{"an encoded U+FFFD passes through", []int32{0xef, 0xbf, 0xbd}, []string{"", "", "\uFFFD", ""}},
		{"a special ends a run of invalid bytes", []int32{0xff, 262, 0xff}, []string{"\uFFFD", "<|endoftext|>", "\uFFFD", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := stream(t, tok.NewDetokenizer(false), tt.ids)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("pieces %q, want %q", got, tt.want)
			}
			checkPieces(t, got, tok.Decode(tt.ids))
		})
	}
}

func TestDetokenizerIsReusableAfterFlush(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	d := tok.NewDetokenizer(false)
	checkPieces(t, stream(t, d, []int32{0xff, 0xe2}), "\uFFFD")
	// The invalid run and the held byte must not leak into the next stream.
	checkPieces(t, stream(t, d, []int32{0xfe, 'a'}), "\uFFFDa")
}

// fuzzIDs turns fuzz bytes into ids: a byte is its byte token, except that
// 0x00 escapes the next byte n: n = 0 is byte 0, otherwise id 255+n (the
// specials and padding of a 512 vocabulary).
func fuzzIDs(data []byte) []int32 {
	var ids []int32
	for i := 0; i < len(data); i++ {
		if data[i] != 0 || i+1 == len(data) {
			ids = append(ids, int32(data[i]))
			continue
		}
		i++
		if data[i] == 0 {
			ids = append(ids, 0)
		} else {
			ids = append(ids, 255+int32(data[i]))
		}
	}
	return ids
}

func FuzzDetokenizer(f *testing.F) {
	for _, seed := range []string{
		"", "hello", "héllo 😀", "\xe2\x82\xac\xe2\x82", "\xff\xfe\xfd", "\xf0\x9f\x98\x00\x07\x80",
		"a\x00\x08b\x00\x09c", "\xed\xa0\x80\xc0\xaf", "\xe2\x00\x30\x82\xac", "\x00\x00\xf4\x90\x80\x80",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	tok, err := New(512)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		ids := fuzzIDs(data)
		want := tok.Decode(ids)
		if skip {
			want = tok.DecodeSkipSpecial(ids)
		}
		checkPieces(t, stream(t, tok.NewDetokenizer(skip), ids), want)

		// The reasoning splitter streams the same ids into two texts that
		// together are the decoded ids without the think tags.
		s := tok.NewReasoningSplitter(len(data)%2 == 0, skip)
		var reasoning, content strings.Builder
		for _, id := range ids {
			r, c := s.Add(id)
			if !utf8.ValidString(r) || !utf8.ValidString(c) {
				t.Fatalf("invalid UTF-8 piece %q / %q", r, c)
			}
			reasoning.WriteString(r)
			content.WriteString(c)
		}
		r, c := s.Flush()
		reasoning.WriteString(r)
		content.WriteString(c)
		wantR, wantC := splitReference(tok, ids, len(data)%2 == 0, skip)
		if reasoning.String() != wantR || content.String() != wantC {
			t.Fatalf("split (%q, %q), want (%q, %q)", reasoning.String(), content.String(), wantR, wantC)
		}
	})
}

// splitReference is the reasoning split done on the whole id list at once.
func splitReference(tok *Tokenizer, ids []int32, thinking, skip bool) (reasoning, content string) {
	decode := tok.Decode
	if skip {
		decode = tok.DecodeSkipSpecial
	}
	var r, c []int32
	for _, id := range ids {
		switch {
		case id == tok.ThinkEnd() && thinking:
			thinking = false
		case id == tok.Think() || id == tok.ThinkEnd():
		case thinking:
			r = append(r, id)
		default:
			c = append(c, id)
		}
	}
	return decode(r), decode(c)
}

func TestReasoningSplitter(t *testing.T) {
	t.Parallel()
	tok := newTiny(t)
	enc := func(s string) []int32 { return tok.Encode(s) }
	cat := func(parts ...[]int32) []int32 {
		var ids []int32
		for _, p := range parts {
			ids = append(ids, p...)
		}
		return ids
	}
	end, think := []int32{tok.ThinkEnd()}, []int32{tok.Think()}
	tests := []struct {
		name                       string
		thinking, skip             bool
		ids                        []int32
		wantReasoning, wantContent string
		wantInReasoningAtStart     bool
	}{
		{"thinking on: before </think> is reasoning, after it content", true, true,
			cat(enc("Let me see."), end, enc("It is 4.")), "Let me see.", "It is 4.", true},
		{"thinking on with no </think>: all reasoning", true, true,
			enc("still thinking"), "still thinking", "", true},
		{"thinking off: all content", false, true,
			enc("Hello"), "", "Hello", false},
		{"thinking off: stray think tags are dropped", false, true,
			cat(think, enc("a"), end, enc("b")), "", "ab", false},
		{"a repeated <think> at the start is dropped", true, true,
			cat(think, enc("r"), end, enc("c")), "r", "c", true},
		{"a second think pair stays content without its tags", true, true,
			cat(enc("r"), end, enc("c1"), think, enc("x"), end, enc("c2")), "r", "c1xc2", true},
		{"a character cut by </think> is replaced, not carried over", true, true,
			cat(enc("é")[:1], end, enc("é")[1:], enc("ok")), "\uFFFD", "\uFFFDok", true},
		{"multi-byte text on both sides", true, true,
			cat(enc("思考😀"), end, enc("答案€")), "思考😀", "答案€", true},
		{"control specials are skipped when asked", true, true,
			cat(enc("r"), end, enc("c"), []int32{tok.EndOfText()}), "r", "c", true},
		{"control specials show when not skipped", true, false,
			cat(enc("r"), end, enc("c"), []int32{tok.EndOfText()}), "r", "c<|endoftext|>", true},
		{"tool-call markup stays in content", true, true,
			cat(end, []int32{265}, enc("f"), []int32{266}), "", "<tool_call>f</tool_call>", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tok.NewReasoningSplitter(tt.thinking, tt.skip)
			if s.InReasoning() != tt.wantInReasoningAtStart {
				t.Fatalf("InReasoning() = %v at the start", s.InReasoning())
			}
			var reasoning, content strings.Builder
			for _, id := range tt.ids {
				r, c := s.Add(id)
				if r != "" && c != "" {
					t.Fatalf("Add(%d) gave both reasoning %q and content %q", id, r, c)
				}
				reasoning.WriteString(r)
				content.WriteString(c)
			}
			r, c := s.Flush()
			reasoning.WriteString(r)
			content.WriteString(c)
			if reasoning.String() != tt.wantReasoning || content.String() != tt.wantContent {
				t.Fatalf("reasoning %q, content %q; want %q, %q", reasoning.String(), content.String(), tt.wantReasoning, tt.wantContent)
			}
		})
	}
}
