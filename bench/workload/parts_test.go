package workload

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
)

// turn is one message of a test conversation; null is a turn whose content
// is null (an assistant's that only called tools).
type turn struct {
	role, content string
	null          bool
}

// partsConversations are conversations of the shapes a JSONL data set of
// OpenAI-format messages has, one a line: a system turn, multi-line
// turns, a developer turn, a tool exchange (a null assistant turn and the
// tool turn answering it) between text turns, an empty user turn, a
// function turn, and a line of tool turns alone (nothing to send).
var partsConversations = [][]turn{
	{{role: "system", content: "be brief"}, {role: "user", content: "why?"}},
	{{role: "user", content: "line 1\nline 2\n\nline 4"}, {role: "assistant", content: "a\nb"}, {role: "user", content: "and?"}},
	{{role: "developer", content: "answer in French"}, {role: "user", content: "hello"}},
	{{role: "user", content: "weather?"}, {role: "assistant", null: true}, {role: "tool", content: `{"t": 21}`}, {role: "assistant", content: "21 degrees"}, {role: "user", content: "thanks"}},
	{{role: "tool", content: "orphan"}},
	{{role: "user", content: ""}},
	{{role: "function", content: "f"}, {role: "user", content: "q"}},
}

// jsonlLine is a conversation as a JSONL line of messages, each turn's
// content written by asParts (a string when it returns nil).
func jsonlLine(t *testing.T, c []turn, asParts func(i int, tr turn) []map[string]any) string {
	t.Helper()
	var msgs []map[string]any
	for i, tr := range c {
		m := map[string]any{"role": tr.role, "content": tr.content}
		if tr.null {
			m["content"], m["tool_calls"] = nil, []map[string]any{{"id": "c1", "type": "function"}}
		} else if p := asParts(i, tr); p != nil {
			m["content"] = p
		}
		msgs = append(msgs, m)
	}
	b, err := json.Marshal(map[string]any{"messages": msgs, "max_tokens": 5})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// textPartsOf is s as text parts of type typ, one a line of s: joined with
// "\n", as vLLM joins them, they are s again.
func textPartsOf(typ, s string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(s, "\n") {
		out = append(out, map[string]any{"type": typ, "text": l})
	}
	return out
}

// The same conversations written with string content, with OpenAI's list
// of text parts (a part a line of the string), and with strings and
// Responses-API parts (input_text, output_text) mixed in a line, give
// identical items (messages, lines, max_tokens) and skips. The rules are
// those of the string form: developer is read as system; tool and
// function turns and a null assistant turn are passed over; a line left
// with nothing to send is skipped.
func TestJSONLContentPartsReadAsTheStrings(t *testing.T) {
	t.Parallel()
	forms := map[string]func(i int, tr turn) []map[string]any{
		"strings": func(int, turn) []map[string]any { return nil },
		"parts":   func(_ int, tr turn) []map[string]any { return textPartsOf("text", tr.content) },
		"mixed": func(i int, tr turn) []map[string]any {
			switch {
			case i%2 == 0:
				return nil
			case tr.role == "assistant":
				return textPartsOf("output_text", tr.content)
			}
			return textPartsOf("input_text", tr.content)
		},
	}
	got := map[string]*loaded{}
	for name, form := range forms {
		var lines []string
		for _, c := range partsConversations {
			lines = append(lines, jsonlLine(t, c, form))
		}
		l, err := loadDataset(strings.NewReader(strings.Join(lines, "\n")), name+".jsonl", JSONL, 0, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = l
	}
	want := got["strings"]
	for _, name := range []string{"parts", "mixed"} {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got[name], want)
		}
	}
	// The premise, in the string form: the rules above, by line.
	byLine := map[int][]Message{}
	for _, it := range want.items {
		if it.MaxTokens != 5 {
			t.Errorf("line %d: max_tokens %d, want 5", it.Line, it.MaxTokens)
		}
		byLine[it.Line] = it.Messages
	}
	wantLines := map[int][]Message{
		1: {{"system", "be brief"}, {"user", "why?"}},
		2: {{"user", "line 1\nline 2\n\nline 4"}, {"assistant", "a\nb"}, {"user", "and?"}},
		3: {{"system", "answer in French"}, {"user", "hello"}},
		4: {{"user", "weather?"}, {"assistant", "21 degrees"}, {"user", "thanks"}},
		6: {{"user", ""}},
		7: {{"user", "q"}},
	}
	if !reflect.DeepEqual(byLine, wantLines) || !reflect.DeepEqual(want.skipped, map[string]int{"nothing to send": 1}) {
		t.Errorf("items %+v, skipped %v;\nwant %+v and 1 with nothing to send", byLine, want.skipped, wantLines)
	}
}

// A turn sent that holds a part that is not text (OpenAI's image_url,
// input_audio and file, vLLM's video_url, a Hugging Face template's image)
// makes its line skipped, counted by the part's type, and the phase's
// warning says so; a media part in a tool turn, which is not sent, does
// not. The 3 text lines are the phase's requests.
func TestJSONLMultimodalTurnsAreSkippedByType(t *testing.T) {
	t.Parallel()
	img := `{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}`
	lines := []string{
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "plain"}]}]}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, ` + img + `]}]}`,
		`{"messages": [{"role": "user", "content": [` + img + `]}, {"role": "assistant", "content": "a cat"}, {"role": "user", "content": "sure?"}]}`,
		`{"messages": [{"role": "user", "content": "say it"}, {"role": "assistant", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}, {"role": "user", "content": "again"}]}`,
		`{"messages": [{"role": "system", "content": [{"type": "file", "file": {"file_id": "f1"}}]}, {"role": "user", "content": "summarise"}]}`,
		`{"messages": [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "v.mp4"}}, {"type": "text", "text": "what happens?"}]}]}`,
		`{"messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "describe"}]}]}`,
		`{"messages": [{"role": "user", "content": "look"}, {"role": "assistant", "content": null}, {"role": "tool", "content": [` + img + `]}, {"role": "assistant", "content": "a chart"}, {"role": "user", "content": "ok"}]}`,
		`{"prompt": "third"}`,
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mm.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	got, err := loadDataset(strings.NewReader(strings.Join(lines, "\n")), "mm.jsonl", JSONL, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	wantSkips := map[string]int{"multimodal content (image_url)": 2, "multimodal content (input_audio)": 1, "multimodal content (file)": 1, "multimodal content (video_url)": 1, "multimodal content (image)": 1}
	if len(got.items) != 3 || got.items[0].Line != 1 || got.items[1].Line != 8 || got.items[2].Line != 9 || !reflect.DeepEqual(got.skipped, wantSkips) {
		t.Fatalf("items %+v, skipped %v; want lines 1, 8 and 9 and skips %v", got.items, got.skipped, wantSkips)
	}
	if m := got.items[1].Messages; len(m) != 3 || m[1] != (Message{"assistant", "a chart"}) {
		t.Errorf("the tool turn's line: %+v, want the tool exchange passed over", m)
	}
	p := mustPhase(t, `phases: [{name: d, kind: dataset, path: mm.jsonl, output_tokens: 8}]`, dir)
	reqs, warns, err := p.ExpandWarn(1)
	const warn = "mm.jsonl: skipped 6 unusable conversations (1 with multimodal content (file), 1 with multimodal content (image), 2 with multimodal content (image_url), 1 with multimodal content (input_audio), 1 with multimodal content (video_url))"
	if err != nil || len(reqs) != 3 || len(warns) != 1 || !strings.HasSuffix(warns[0], warn) {
		t.Errorf("%d requests, warnings %q, %v; want 3 and %q", len(reqs), warns, err, warn)
	}
}

// A bad part, or content that is neither a string, null nor a list of
// parts, is bad input of one line naming the file, the line (2, after a
// good one) and the message (1), whether the message is sent or not (a
// tool turn), and before any media part in it could skip the line.
func TestJSONLBadContentPartsAreOneLineOfBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, content, want string }{
		{"an unknown type", `[{"type": "bogus", "text": "x"}]`, `content[0]: part type "bogus": want text, or a media part`},
		{"no type", `[{"text": "x"}]`, `content[0]: want a part with a "type" string`},
		{"a null type", `[{"type": null, "text": "x"}]`, `content[0]: want a part with a "type" string`},
		{"a number type", `[{"type": 1, "text": "x"}]`, `content[0]: want a part with a "type" string`},
		{"a number text", `[{"type": "text", "text": "a"}, {"type": "text", "text": 5}]`, `content[1]: a part of type "text": want a "text" string`},
		{"no text", `[{"type": "text"}]`, `content[0]: a part of type "text": want a "text" string`},
		{"a null text", `[{"type": "input_text", "text": null}]`, `content[0]: a part of type "input_text": want a "text" string`},
		{"a refusal without its text", `[{"type": "refusal", "text": "no"}]`, `content[0]: a part of type "refusal": want a "refusal" string`},
		{"a string part", `["hi"]`, `content[0]: want a part {"type": ..., ...}, got a string`},
		{"a bad part after an image", `[{"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": {}}]`, `content[1]: a part of type "text": want a "text" string`},
		{"a number", `5`, `content: want a string or a list of parts, got a number`},
		{"an object", `{"type": "text", "text": "x"}`, `content: want a string or a list of parts, got an object`},
	}
	for _, c := range cases {
		for _, role := range []string{"user", "tool"} {
			data := `{"prompt": "ok"}` + "\n" + `{"messages": [{"role": "system", "content": "s"}, {"role": "` + role + `", "content": ` + c.content + `}], "max_tokens": 3}`
			_, err := loadDataset(strings.NewReader(data), "d.jsonl", JSONL, 0, false)
			checkOneLine(t, c.name+", "+role, err, "d.jsonl:2: messages[1]: "+c.want)
		}
	}
	for _, c := range []struct{ name, msgs, want string }{
		{"a null user turn", `[{"role": "user", "content": null}]`, `messages[0]: null content: only an assistant turn (one that called tools) may have none`},
		{"a null developer turn", `[{"role": "user", "content": "q"}, {"role": "developer", "content": null}]`, `messages[1]: null content: only an assistant turn`},
		{"an unknown role", `[{"role": "robot", "content": [{"type": "text", "text": "x"}]}]`, `messages[0]: role "robot": want system, user or assistant (or developer, read as system; tool or function, passed over)`},
	} {
		_, err := loadDataset(strings.NewReader(`{"prompt": "ok"}`+"\n"+`{"messages": `+c.msgs+`}`), "d.jsonl", JSONL, 0, false)
		checkOneLine(t, c.name, err, "d.jsonl:2: "+c.want)
	}
}

// checkOneLine fails the test unless err is bad input of one line
// starting with want.
func checkOneLine(t *testing.T, name string, err error, want string) {
	t.Helper()
	if err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: got %v, want one line of bad input starting %q", name, err, want)
	}
}

// A conversation reads by one rule of roles whether JSONL messages or
// parquet turns (and ShareGPT JSON, whose rules parquet follows): a
// developer turn is the system turn, and tool turns are not sent. JSONL
// sends the whole conversation; parquet its system and first user turn,
// with the next assistant turn's length as the answer, so the two agree
// on the turns up to the first user turn.
func TestRolesReadAlikeInJSONLAndParquet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	convs := [][]rcTurn{
		{{"be brief", "developer"}, {"why?", "user"}, {"because", "assistant"}},
		{{"ctx", "tool"}, {"be kind", "developer"}, {"hi", "user"}, {"r", "tool"}, {"hello!", "assistant"}},
		{{"sys", "system"}, {"q", "user"}, {"a", "assistant"}},
	}
	var jsonl, sg strings.Builder
	var ultra []ultraRow
	sg.WriteString("[\n")
	for i, c := range convs {
		var msgs, turns []map[string]any
		for _, tr := range c {
			msgs = append(msgs, map[string]any{"role": tr.Role, "content": []map[string]any{{"type": "text", "text": tr.Content}}})
			turns = append(turns, map[string]any{"from": tr.Role, "value": tr.Content})
		}
		b, _ := json.Marshal(map[string]any{"messages": msgs})
		jsonl.Write(append(b, '\n'))
		b, _ = json.Marshal(map[string]any{"conversations": turns})
		if i > 0 {
			sg.WriteString(",\n")
		}
		sg.Write(b)
		ultra = append(ultra, ultraRow{Messages: c})
	}
	sg.WriteString("\n]")
	lines, err := loadDataset(strings.NewReader(jsonl.String()), "r.jsonl", JSONL, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	array, err := loadDataset(strings.NewReader(sg.String()), "r.json", ShareGPT, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := loadFile(t, parquettest.Write(t, dir, "r.parquet", ultra, 2), Parquet, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asRows(array), pq) {
		t.Errorf("ShareGPT %+v, parquet %+v", array, pq)
	}
	want := [][]Message{
		{{"system", "be brief"}, {"user", "why?"}, {"assistant", "because"}},
		{{"system", "be kind"}, {"user", "hi"}, {"assistant", "hello!"}},
		{{"system", "sys"}, {"user", "q"}, {"assistant", "a"}},
	}
	if len(lines.items) != 3 || len(pq.items) != 3 {
		t.Fatalf("JSONL %+v, parquet %+v: want 3 items each", lines, pq)
	}
	for i, w := range want {
		got, p := lines.items[i], pq.items[i]
		if !reflect.DeepEqual(got.Messages, w) || !reflect.DeepEqual(p.Messages, w[:2]) || p.AnswerChars != len(w[2].Content) || got.Line != i+1 || p.Line != i+1 {
			t.Errorf("conversation %d: JSONL %+v, parquet %+v; want %+v", i, got, p, w)
		}
	}
}

func FuzzJSONLContentParts(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "developer", "content": [{"type": "text", "text": "s"}]}, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]}]}`))
	f.Add([]byte(`{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": []}, {"role": "tool", "content": [{"type": "text", "text": 1}]}]}`))
	f.Add([]byte(`{"messages": [{"role": "tool", "content": "t"}]}` + "\n" + `{"messages": [{"role": "user", "content": [{"type": "refusal", "refusal": "no"}, "x"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := loadDataset(bytes.NewReader(data), "d", JSONL, 0, false)
		checkLoadErr(t, err)
		if err != nil {
			return
		}
		for _, it := range got.items {
			if len(it.Messages) == 0 {
				t.Fatalf("item %+v: no messages", it)
			}
			for _, m := range it.Messages {
				if m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
					t.Fatalf("item %+v: want messages of system, user and assistant only", it)
				}
			}
		}
	})
}

// A parquet column of JSON turns (a string a row) whose content is a list
// of text parts reads as the same turns with string content do (items,
// skips, rows), by the ShareGPT rules; a media part in the turns sent (the
// first user turn, the system turn before it) skips the row by its type,
// one in a turn not sent (the answer, a later turn) does not.
func TestParquetJSONTurnsTakeContentParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type jsonRow struct {
		Messages string `parquet:"messages"`
	}
	turns := roleContent(sampleConversations(14))
	var plain, parts []jsonRow
	for _, c := range turns {
		var m, q []map[string]any
		for _, tr := range c {
			m = append(m, map[string]any{"role": tr.Role, "content": tr.Content})
			q = append(q, map[string]any{"role": tr.Role, "content": textPartsOf("text", tr.Content)})
		}
		b, _ := json.Marshal(m)
		plain = append(plain, jsonRow{string(b)})
		b, _ = json.Marshal(q)
		parts = append(parts, jsonRow{string(b)})
	}
	want, err := loadFile(t, parquettest.Write(t, dir, "plain.parquet", plain, 4), Parquet, 0, true)
	if err != nil || len(want.items) == 0 || len(want.skipped) == 0 {
		t.Fatalf("%+v, %v", want, err)
	}
	got, err := loadFile(t, parquettest.Write(t, dir, "parts.parquet", parts, 4), Parquet, 0, true)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parts: %+v, %v\nwant %+v", got, err, want)
	}
	img := `{"type": "image_url", "image_url": {"url": "u"}}`
	mm := []jsonRow{
		{`[{"role": "user", "content": [{"type": "text", "text": "q"}, ` + img + `]}, {"role": "assistant", "content": "a"}]`},
		{`[{"role": "system", "content": [{"type": "file", "file": {}}]}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]`},
		{`[{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "text", "text": "ab"}, ` + img + `]}, {"role": "user", "content": [` + img + `]}]`},
	}
	got, err = loadFile(t, parquettest.Write(t, dir, "mm.parquet", mm, 4), Parquet, 0, true)
	wantSkips := map[string]int{"multimodal content (image_url)": 1, "multimodal content (file)": 1}
	if err != nil || len(got.items) != 1 || got.items[0].Line != 3 || got.items[0].AnswerChars != 2 || !reflect.DeepEqual(got.skipped, wantSkips) {
		t.Errorf("%+v, %v; want row 3 (answer 2 bytes) and skips %v", got, err, wantSkips)
	}
}

// A data set whose every line is skipped says why in its refusal, not only
// that nothing is usable: the warning that counts the skips is never
// printed when the phase is refused. The truth: two image lines and a line
// of tool turns alone give "no usable items" with the three skips by
// reason; one usable line where the phase asks for 2 gives the count with
// the two image lines skipped.
func TestADataSetOfSkippedLinesSaysWhyInItsRefusal(t *testing.T) {
	t.Parallel()
	img := `{"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "u"}}]}]}`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mm.jsonl"), []byte(img+"\n"+img+"\n"+`{"messages": [{"role": "tool", "content": "42"}]}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "one.jsonl"), []byte(img+"\n"+`{"prompt": "q"}`+"\n"+img+"\n"), 0o644)
	for _, c := range []struct{ spec, want string }{
		{`{name: d, kind: dataset, path: mm.jsonl, output_tokens: 4}`,
			"mm.jsonl: no usable items: skipped 3 unusable conversations (2 with multimodal content (image_url), 1 with nothing to send)"},
		{`{name: d, kind: dataset, path: one.jsonl, output_tokens: 4, requests: 2}`,
			`one.jsonl: 1 usable items, phase "d" asks for 2: skipped 2 unusable conversations (2 with multimodal content (image_url))`},
	} {
		p := mustPhase(t, "phases: ["+c.spec+"]", dir)
		_, err := p.Expand(1)
		checkOneLine(t, c.spec, err, "")
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec, err, c.want)
		}
	}
}

// A tool exchange is passed over whole, the assistant turn that called the
// tools with it: with its content kept, a JSONL line of OpenAI's log of
// user, assistant ("Let me check." and a tool call), tool, assistant sent
// two assistant turns in a row, which chat templates that check roles
// alternate (Mistral's, Gemma's) refuse, and parquet's answer was the
// preamble, or nothing where the call's content is null. The truth, for
// both shapes of the call (null content, content beside tool_calls; a
// legacy function_call too): JSONL sends [user, the final answer];
// parquet's JSON turns give the user turn with the final answer's length
// as the answer; a ShareGPT array whose tool-calling turn is only an empty
// gpt turn gives the same answer, and one whose only gpt turn is empty
// has none.
func TestAToolExchangeIsPassedOverWholeInJSONLAndParquet(t *testing.T) {
	t.Parallel()
	call := `"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]`
	calls := []string{
		`{"role": "assistant", "content": null, ` + call + `}`,
		`{"role": "assistant", "content": "Let me check.", ` + call + `}`,
		`{"role": "assistant", "content": [{"type": "text", "text": "Let me check."}], ` + call + `}`,
		`{"role": "assistant", "content": "Checking.", "function_call": {"name": "weather", "arguments": "{}"}}`,
	}
	type jsonRow struct {
		Messages string `parquet:"messages"`
	}
	var lines []string
	var rows []jsonRow
	for _, c := range calls {
		msgs := `[{"role": "user", "content": "weather?"}, ` + c + `, {"role": "tool", "content": "21"}, {"role": "assistant", "content": "21 degrees"}]`
		lines = append(lines, `{"messages": `+msgs+`}`)
		rows = append(rows, jsonRow{msgs})
	}
	got, err := loadDataset(strings.NewReader(strings.Join(lines, "\n")), "t.jsonl", JSONL, 0, false)
	if err != nil || len(got.items) != len(calls) {
		t.Fatalf("%+v, %v", got, err)
	}
	want := []Message{{"user", "weather?"}, {"assistant", "21 degrees"}}
	for i, it := range got.items {
		if !reflect.DeepEqual(it.Messages, want) {
			t.Errorf("JSONL line %d: %+v, want %+v", i+1, it.Messages, want)
		}
	}
	pq, err := loadFile(t, parquettest.Write(t, t.TempDir(), "t.parquet", rows, 2), Parquet, 0, true)
	if err != nil || len(pq.items) != len(calls) || len(pq.skipped) != 0 {
		t.Fatalf("parquet: %+v, %v; want %d items, none skipped", pq, err, len(calls))
	}
	for i, it := range pq.items {
		if !reflect.DeepEqual(it.Messages, want[:1]) || it.AnswerChars != len("21 degrees") {
			t.Errorf("parquet row %d: %+v, want %+v with the answer's 10 bytes", i+1, it, want[:1])
		}
	}
	sg := `[{"conversations": [{"from": "human", "value": "weather?"}, {"from": "gpt", "value": ""}, {"from": "tool", "value": "21"}, {"from": "gpt", "value": "21 degrees"}]},
	{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": ""}]}]`
	arr, err := loadDataset(strings.NewReader(sg), "t.json", ShareGPT, 0, true)
	if err != nil || len(arr.items) != 1 || arr.items[0].AnswerChars != 10 || arr.skipped["no answer"] != 1 {
		t.Errorf("ShareGPT: %+v, %v; want the tool exchange's answer, and no answer where the only gpt turn is empty", arr, err)
	}
}

// A ShareGPT conversation that comes with its media beside the turns, as
// LLaVA-Instruct and ShareGPT4V give an "image" path and LLaMA-Factory's
// multimodal ShareGPT sets "images", "videos" or "audios" lists, the
// human turn holding an "<image>" placeholder, is multimodal: read as
// text it sent the placeholder as the prompt, a request the set never
// meant. The truth: in a ShareGPT array and in JSONL conversations lines,
// such a conversation is skipped and counted by its key, and one whose
// key is null, "" or [] is read as text.
func TestShareGPTConversationsWithMediaBesideThemAreSkipped(t *testing.T) {
	t.Parallel()
	turns := `"conversations": [{"from": "human", "value": "<image>\nWhat is shown?"}, {"from": "gpt", "value": "A cat."}]`
	convs := []string{
		`{"id": "1", "image": "coco/train2017/000000033471.jpg", ` + turns + `}`,
		`{"images": ["a.png", "b.png"], ` + turns + `}`,
		`{"videos": ["v.mp4"], ` + turns + `}`,
		`{"audios": ["a.wav"], ` + turns + `}`,
		`{"image": null, ` + turns + `}`,
		`{"images": [], "image": "", ` + turns + `}`,
		`{` + turns + `}`,
	}
	wantSkips := map[string]int{"multimodal content (image)": 1, "multimodal content (images)": 1, "multimodal content (videos)": 1, "multimodal content (audios)": 1}
	arr, err := loadDataset(strings.NewReader("[\n"+strings.Join(convs, ",\n")+"\n]"), "mm.json", ShareGPT, 0, true)
	if err != nil || len(arr.items) != 3 || arr.items[0].Line != 6 || !reflect.DeepEqual(arr.skipped, wantSkips) {
		t.Errorf("ShareGPT: %+v, %v; want lines 6 to 8 and skips %v", arr, err, wantSkips)
	}
	lines, err := loadDataset(strings.NewReader(strings.Join(convs, "\n")), "mm.jsonl", JSONL, 0, true)
	if err != nil || len(lines.items) != 3 || lines.items[0].Line != 5 || !reflect.DeepEqual(lines.skipped, wantSkips) {
		t.Errorf("JSONL: %+v, %v; want lines 5 to 7 and skips %v", lines, err, wantSkips)
	}
}

// A ShareGPT conversation of OpenAI-style turns ({role, content}, as
// lmsys-chat-1m and many Hub sets write "conversations") reads alike as a
// JSONL conversations line and as a parquet string column of JSON turns,
// content parts, media, developer, tool turns and tool calls included:
// the JSONL line read no from or value in it, so every such conversation
// was skipped as having no human turn. The truth: the two readings are
// equal, row for line (items and skips), with 5 items and one skip for
// the image.
func TestRoleContentConversationsReadAlikeInJSONLAndParquet(t *testing.T) {
	t.Parallel()
	img := `{"type": "image_url", "image_url": {"url": "u"}}`
	convs := []string{
		`[{"role": "system", "content": "be brief"}, {"role": "user", "content": "why?"}, {"role": "assistant", "content": "because"}]`,
		`[{"role": "developer", "content": [{"type": "text", "text": "be"}, {"type": "text", "text": "kind"}]}, {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}, {"role": "assistant", "content": "hello!"}]`,
		`[{"role": "User", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]}, {"role": "tool", "content": "42"}, {"role": "assistant", "content": "42."}]`,
		`[{"role": "user", "content": [` + img + `, {"type": "text", "text": "what?"}]}, {"role": "assistant", "content": "a cat"}]`,
		`[{"role": "user", "content": "q"}, {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "c"}]}, {"role": "tool", "content": "7"}, {"role": "assistant", "content": "seven"}]`,
		`[{"role": "tool", "content": "ctx"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]`,
	}
	type jsonRow struct {
		Conversations string `parquet:"conversations"`
	}
	var lines []string
	var rows []jsonRow
	for _, c := range convs {
		lines = append(lines, `{"conversations": `+c+`}`)
		rows = append(rows, jsonRow{c})
	}
	got, err := loadDataset(strings.NewReader(strings.Join(lines, "\n")), "c.jsonl", JSONL, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadFile(t, parquettest.Write(t, t.TempDir(), "c.parquet", rows, 2), Parquet, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.items) != 5 || want.skipped["multimodal content (image_url)"] != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("JSONL %+v\nparquet %+v: want them equal, 5 items and the image skipped", got, want)
	}
	if len(want.items) == 5 && (want.items[1].Messages[0] != Message{"system", "be\nkind"} || want.items[2].AnswerChars != 3 || want.items[3].AnswerChars != 5) {
		t.Errorf("parquet %+v: want the developer's parts as the system turn, the answers after the tool exchanges", want.items)
	}
}
