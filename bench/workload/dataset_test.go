package workload

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

const goodConv = `{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "bb"}]}`

func TestLoadersSayTheFileAndLineOfABrokenEntry(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, format, data, want string }{
		{"sharegpt: bad syntax on line 3", ShareGPT, "[\n " + goodConv + ",\n {\"conversations\": [{\"from\": \"human\" \"value\": \"c\"}]}\n]", `d:3: invalid character '"' after object key:value pair`},
		{"sharegpt: bad syntax deep in a long entry", ShareGPT, "[\n" + goodConv + ",\n{\"conversations\": [\n{\"from\": \"human\",\n\"value\": x}]}]", `d:5: invalid character 'x' looking for beginning of value`},
		{"sharegpt: a wrong type on line 3", ShareGPT, "[\n " + goodConv + ",\n {\"conversations\": \"c\"}\n]", `d:3: conversations: want a list, got string`},
		{"sharegpt: a wrong type on a later line of an entry", ShareGPT, "[\n" + goodConv + ",\n{\"id\": 1,\n\"conversations\": [{\"from\": 7}]}]", `d:4: conversations.from: want a string, got number`},
		{"sharegpt: an entry that is not an object", ShareGPT, "[\n" + goodConv + ",\n 5]", `d:3: conversation: want a mapping, got number`},
		{"sharegpt: not an array", ShareGPT, `{"conversations": []}`, `d:1: want a JSON array of conversations (ShareGPT)`},
		{"sharegpt: an empty file", ShareGPT, ``, `d:1: want a JSON array`},
		{"sharegpt: cut short", ShareGPT, "[\n" + goodConv + ",\n" + `{"conversations": [`, `d:3: the file ends inside the array of conversations`},
		{"sharegpt: data after the array", ShareGPT, "[" + goodConv + "]\n\n[]", `d:3: data after the array of conversations`},
		{"jsonl: bad JSON on line 3", JSONL, `{"prompt": "a"}` + "\n\n" + `{"prompt": "b"`, `d:3: want {"prompt": "..."} or {"messages": [...]}: unexpected end of JSON input`},
		{"jsonl: prompt and messages", JSONL, "{\"prompt\": \"a\"}\n{\"prompt\": \"a\"}\n" + `{"prompt": "b", "messages": [{"role": "user", "content": "c"}]}`, `d:3: prompt and messages: give one`},
		{"jsonl: neither", JSONL, `{"max_tokens": 4}`, `d:1: want {"prompt": "..."} or {"messages": [...]}`},
		{"jsonl: a bad role", JSONL, `{"messages": [{"role": "robot", "content": "c"}]}`, `d:1: messages[0]: role "robot": want system, user or assistant`},
		{"jsonl: no content", JSONL, `{"messages": [{"role": "user"}]}`, `d:1: messages[0]: want role and content`},
		{"jsonl: max_tokens 0", JSONL, `{"prompt": "a", "max_tokens": 0}`, `d:1: max_tokens 0: want 1 to 10000000`},
		{"jsonl: fractional max_tokens", JSONL, `{"prompt": "a", "max_tokens": 1.5}`, `d:1: max_tokens: want an integer, got number 1.5`},
		{"jsonl: an empty prompt", JSONL, `{"prompt": " "}`, `d:1: empty prompt`},
		{"jsonl: not an object", JSONL, `[1]`, `d:1: want {"prompt": "..."} or {"messages": [...]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadDataset(strings.NewReader(c.data), "d", c.format, 0, true)
			if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want bad input containing %q", err, c.want)
			}
		})
	}
}

func TestTraceLoaderSaysTheLineOfABrokenEntry(t *testing.T) {
	t.Parallel()
	ok := `{"timestamp": 10, "input_length": 5, "output_length": 2}` + "\n"
	cases := []struct{ name, line, want string }{
		{"bad JSON", `{"timestamp": 12,`, `t:3: want {"timestamp": ..., "input_length": ..., "output_length": ...}: unexpected end of JSON input`},
		{"no input_length", `{"timestamp": 12, "output_length": 2}`, `t:3: input_length: required`},
		{"no timestamp", `{"input_length": 1, "output_length": 2}`, `t:3: timestamp: required`},
		{"no output_length", `{"timestamp": 12, "input_length": 1}`, `t:3: output_length: required`},
		{"time going back", `{"timestamp": 9, "input_length": 5, "output_length": 2}`, `t:3: timestamp 9: before the previous line's 10`},
		{"output 0", `{"timestamp": 12, "input_length": 5, "output_length": 0}`, `t:3: output_length 0: want 1 to 10000000`},
		{"a string length", `{"timestamp": 12, "input_length": "5", "output_length": 2}`, `t:3: input_length: want an integer, got string`},
		{"a huge timestamp", `{"timestamp": 1e300, "input_length": 5, "output_length": 2}`, `t:3: timestamp 1e+300: out of range`},
	}
	for _, c := range cases {
		_, err := loadTrace(strings.NewReader(ok+"\n"+c.line+"\n"+ok), "t", 0, 1e-3, 1)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestShareGPTSkipsUnusableConversations(t *testing.T) {
	t.Parallel()
	data := `[` + goodConv + `,
 {"conversations": [{"from": "gpt", "value": "hi"}]},
 {"id": "x"},
 {"conversations": [{"from": "system", "value": "be brief"}, {"from": "bing", "value": "?"}, {"from": "user", "value": "q"}, {"from": "human", "value": "q2"}, {"from": "assistant", "value": "abc"}]},
 {"conversations": [{"from": "human", "value": "no answer"}]}]`
	got, err := loadDataset(strings.NewReader(data), "d", ShareGPT, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.items) != 2 || got.skipped["no human turn"] != 2 || got.skipped["no answer"] != 1 {
		t.Fatalf("items %+v, skipped %v; want 2 items, 2 without a human turn, 1 without an answer", got.items, got.skipped)
	}
	it := got.items[1]
	if it.Line != 4 || len(it.Messages) != 2 || it.Messages[0] != (Message{"system", "be brief"}) || it.Messages[1] != (Message{"user", "q"}) || it.AnswerChars != 3 {
		t.Errorf("the system-turn conversation: %+v", it)
	}
	// With the phase's own output_tokens an unanswered conversation is
	// usable.
	got, _ = loadDataset(strings.NewReader(data), "d", ShareGPT, 0, false)
	if len(got.items) != 3 || got.items[2].AnswerChars != 0 {
		t.Errorf("needAnswer false: %+v", got.items)
	}
}

// The Hub's ShareGPT-format JSONL (a conversation a line) gives the items
// the ShareGPT array of the same conversations gives, skips included, save
// the line numbers; a line's own max_tokens makes an unanswered one usable,
// and a line with conversations and a prompt is refused.
func TestShareGPTLinesInJSONLReadAsTheArrayDoes(t *testing.T) {
	t.Parallel()
	convs := []string{goodConv,
		`{"conversations": [{"from": "gpt", "value": "hi"}]}`,
		`{"conversations": [{"from": "system", "value": "be brief"}, {"from": "user", "value": "q"}, {"from": "assistant", "value": "abc"}]}`,
		`{"conversations": [{"from": "human", "value": "no answer"}]}`,
		`{"conversations": [{"from": "human", "value": "its own"}], "max_tokens": 7}`}
	array, err := loadDataset(strings.NewReader("[\n"+strings.Join(convs, ",\n")+"]"), "d.json", ShareGPT, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := loadDataset(strings.NewReader(strings.Join(convs, "\n")), "d.jsonl", JSONL, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(array.items) != 2 || len(lines.items) != 3 || lines.skipped["no human turn"] != 1 || lines.skipped["no answer"] != 1 {
		t.Fatalf("array %+v, lines %+v (skipped %v): want the array's 2 items and the max_tokens line", array.items, lines.items, lines.skipped)
	}
	for i, it := range array.items {
		got := lines.items[i]
		if !slices.Equal(got.Messages, it.Messages) || got.AnswerChars != it.AnswerChars || got.Line != it.Line-1 {
			t.Errorf("item %d: lines %+v, array %+v", i, got, it)
		}
	}
	if own := lines.items[2]; own.MaxTokens != 7 || own.Line != 5 || own.Messages[0].Content != "its own" {
		t.Errorf("the max_tokens line: %+v", own)
	}
	_, err = loadDataset(strings.NewReader(`{"conversations": [], "prompt": "p"}`), "d.jsonl", JSONL, 0, false)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "d.jsonl:1: conversations with prompt or messages") {
		t.Errorf("conversations and prompt: %v", err)
	}
}

// stopReader serves data and fails the test's load if read past limit
// bytes: a loader that stops after the items it needs never gets there.
type stopReader struct {
	r     io.Reader
	read  int
	limit int
}

var errReadTooFar = errors.New("read past what the phase needs")

func (s *stopReader) Read(p []byte) (int, error) {
	if s.read >= s.limit {
		return 0, errReadTooFar
	}
	p = p[:min(len(p), s.limit-s.read)]
	n, err := s.r.Read(p)
	s.read += n
	return n, err
}

func TestLoadersStopAfterTheItemsThePhaseNeeds(t *testing.T) {
	t.Parallel()
	const need = 3
	// Each format: 3 entries, then 4 MB more; the reader allows the head
	// and 64 KiB of read-ahead.
	build := func(entry string, open, sep, close string) (head, all string) {
		var h strings.Builder
		h.WriteString(open)
		for i := range need {
			if i > 0 {
				h.WriteString(sep)
			}
			h.WriteString(entry)
		}
		tail := strings.Repeat(sep+entry, 4<<20/len(entry))
		return h.String(), h.String() + tail + close
	}
	traceLine := `{"timestamp": 1, "input_length": 5, "output_length": 2}`
	for _, c := range []struct {
		format, entry, open, sep, close string
	}{
		{ShareGPT, goodConv, "[\n", ",\n", "\n]"},
		{JSONL, `{"prompt": "p"}`, "", "\n", "\n"},
		{Text, "a prompt", "", "\n", "\n"},
		{"trace", traceLine, "", "\n", "\n"},
	} {
		head, all := build(c.entry, c.open, c.sep, c.close)
		r := func() *stopReader { return &stopReader{r: strings.NewReader(all), limit: len(head) + 64<<10} }
		var n int
		var err error
		if c.format == "trace" {
			var ents []traceEntry
			ents, err = loadTrace(r(), "t", need, 1e-3, 1)
			n = len(ents)
		} else {
			var got *loaded
			got, err = loadDataset(r(), "d", c.format, need, true)
			if got != nil {
				n = len(got.items)
			}
		}
		if err != nil || n != need {
			t.Errorf("%s: %d items, %v; want %d without reading the rest", c.format, n, err, need)
		}
		// Asked for all, the same reader is read too far, and says so
		// with a line: the guard is real.
		if c.format != "trace" {
			_, err = loadDataset(r(), "d", c.format, 0, true)
		} else {
			_, err = loadTrace(r(), "t", 0, 1e-3, 1)
		}
		if err == nil || !strings.Contains(err.Error(), "read: "+errReadTooFar.Error()) || !lineRE.MatchString(err.Error()) {
			t.Errorf("%s: reading it all: %v, want the reader's error with a line", c.format, err)
		}
	}
}

// lineRE is the start of every loader error: NAME:LINE: .
var lineRE = regexp.MustCompile(`^[a-z]+:[1-9][0-9]*: `)

// checkLoadErr is the fuzz tests' property: no panic (the caller got
// here), and an error is one line of bad input with a line number.
func checkLoadErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && (!badinput.Is(err) || !lineRE.MatchString(err.Error()) || strings.Contains(err.Error(), "\n")) {
		t.Fatalf("error %q: want one line of bad input NAME:LINE: ...", err)
	}
}

func FuzzShareGPT(f *testing.F) {
	f.Add([]byte("[" + goodConv + "]"))
	f.Add([]byte("[\n" + goodConv + ",\n{\"conversations\": [{\"from\": \"human\" x}]}]"))
	f.Add([]byte(`[{"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"}]}, 5, "x", null]`))
	f.Add([]byte(`[{"conversations": "c"}]`))
	f.Add([]byte(`[`))
	f.Add([]byte(`[] []`))
	if data, err := files.ReadFile(embedded["sharegpt"]); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := loadDataset(bytes.NewReader(data), "d", ShareGPT, 0, false)
		checkLoadErr(t, err)
		if err == nil {
			prev := 0
			for _, it := range got.items {
				if it.Line < max(prev, 1) || len(it.Messages) == 0 || it.Messages[len(it.Messages)-1].Role != "user" {
					t.Fatalf("item %+v after line %d", it, prev)
				}
				prev = it.Line
			}
		}
	})
}

func FuzzJSONL(f *testing.F) {
	f.Add([]byte(`{"prompt": "a", "max_tokens": 3}` + "\n" + `{"messages": [{"role": "user", "content": "b"}]}`))
	f.Add([]byte("\n\n{\"prompt\": 1}\r\n"))
	f.Add([]byte(`{"messages": [{"role": "robot", "content": "b"}]}`))
	f.Add([]byte(`{"prompt": "a", "max_tokens": 1e99}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := loadDataset(bytes.NewReader(data), "d", JSONL, 0, false)
		checkLoadErr(t, err)
		if err == nil {
			for _, it := range got.items {
				if it.Line < 1 || it.MaxTokens < 0 || it.MaxTokens > MaxTokens || len(it.Messages) == 0 {
					t.Fatalf("item %+v", it)
				}
			}
		}
		got, err = loadDataset(bytes.NewReader(data), "d", Text, 0, false)
		checkLoadErr(t, err)
	})
}

func FuzzTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1, 2]}` + "\n" + `{"timestamp": 7.5, "input_length": 5, "output_length": 2}`))
	f.Add([]byte(`{"timestamp": 9, "input_length": 5, "output_length": 2}` + "\n" + `{"timestamp": 1, "input_length": 5, "output_length": 2}`))
	f.Add([]byte(`{"timestamp": -1e15, "input_length": 5, "output_length": 2}` + "\n" + `{"timestamp": 1e15, "input_length": 5, "output_length": 2}`))
	if data, err := files.ReadFile(embedded["trace"]); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ents, err := loadTrace(bytes.NewReader(data), "t", 0, 1e-3, 0.5)
		checkLoadErr(t, err)
		for i, e := range ents {
			if (i > 0 && e.At < ents[i-1].At) || e.Input < 1 || e.Output < 1 {
				t.Fatalf("entry %d: %+v", i, e)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		data, _ := files.ReadFile("examples/" + n + ".yaml")
		f.Add(data)
	}
	f.Add([]byte("phases: [{name: a, kind: random, requests: 3, input: {dist: normal, mean: 1e7, stddev: 1, min: 1, max: 2}, output_tokens: 1, range_ratio: 0}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("w.yaml", data, "")
		if err != nil {
			if !badinput.Is(err) || !strings.HasPrefix(err.Error(), "w.yaml: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line of bad input naming w.yaml", err)
			}
			return
		}
		for i := range file.Phases {
			p := &file.Phases[i]
			_ = p.Describe()
			// Expanding a valid generated phase never fails; cap the
			// size so the fuzzer stays quick.
			if p.Path == "" && p.Requests <= 1000 && p.Sessions*p.Turns <= 1000 {
				if _, err := p.Expand(1); err != nil {
					t.Fatalf("phase %q: %v", p.Name, err)
				}
			}
		}
	})
}

// A file saved with a UTF-8 byte order mark (PowerShell's Out-File,
// Notepad's "UTF-8 with BOM") loads as the same file without it: the mark
// is neither JSON nor part of the first prompt, and lines count alike.
func TestLoadersReadAFileThatStartsWithAByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	sets := []struct{ format, data string }{
		{ShareGPT, "[\n" + `{"conversations": [{"from": "human", "value": "q1"}, {"from": "gpt", "value": "a1"}]}` + "\n]\n"},
		{JSONL, `{"prompt": "q1", "max_tokens": 4}` + "\n"},
		{Text, "q1\n"},
	}
	for _, s := range sets {
		got, err := loadDataset(strings.NewReader(bom+s.data), "d", s.format, 0, true)
		if err != nil {
			t.Errorf("%s: %v", s.format, err)
			continue
		}
		if len(got.items) != 1 || got.items[0].Messages[0].Content != "q1" || got.items[0].Line != map[string]int{ShareGPT: 2, JSONL: 1, Text: 1}[s.format] {
			t.Errorf("%s: items %+v, want the one prompt q1 at its line", s.format, got.items)
		}
	}
	ents, err := loadTrace(strings.NewReader(bom+`{"timestamp": 0, "input_length": 8, "output_length": 2}`+"\n"), "t", 0, 1e-3, 1)
	if err != nil || len(ents) != 1 || ents[0].Input != 8 {
		t.Errorf("trace: %+v, %v", ents, err)
	}
	// A broken entry's line is still its own.
	_, err = loadDataset(strings.NewReader(bom+"[\n{}, \n{\"conversations\": 5}\n]"), "d", ShareGPT, 0, true)
	if err == nil || !strings.Contains(err.Error(), "d:3:") {
		t.Errorf("err %v, want d:3", err)
	}
}

// A turn's from is matched without regard to case: NeMo's ShareGPT
// conversions (nvidia/Daring-Anteater) write User and Assistant, some sets
// Human, GPT or System.
func TestShareGPTFromIgnoresCase(t *testing.T) {
	t.Parallel()
	lower := `{"conversations": [{"from": "system", "value": "s"}, {"from": "user", "value": "q"}, {"from": "assistant", "value": "abc"}]}` + "\n" +
		`{"conversations": [{"from": "human", "value": "q2"}, {"from": "gpt", "value": "de"}]}`
	upper := `{"conversations": [{"from": "System", "value": "s"}, {"from": "User", "value": "q"}, {"from": "Assistant", "value": "abc"}]}` + "\n" +
		`{"conversations": [{"from": "HUMAN", "value": "q2"}, {"from": "GPT", "value": "de"}]}`
	want, err := loadDataset(strings.NewReader(lower), "d.jsonl", JSONL, 0, true)
	if err != nil || len(want.items) != 2 {
		t.Fatalf("%+v, %v", want, err)
	}
	got, err := loadDataset(strings.NewReader(upper), "d.jsonl", JSONL, 0, true)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
}

// A JSONL data set's outputs come from its conversations' answers as
// from max_tokens: the phase's description says both, as parquet's does.
func TestJSONLPhaseDescribesAnswers(t *testing.T) {
	t.Parallel()
	p := &Phase{Name: "d", Kind: Dataset, Path: "sharegpt.jsonl", Requests: 2}
	if d := p.Describe(); !strings.Contains(d, "out from answers or max_tokens") {
		t.Errorf("describe: %q", d)
	}
}
