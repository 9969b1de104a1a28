package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
)

type sgTurn struct {
	From  string `parquet:"from" json:"from"`
	Value string `parquet:"value" json:"value"`
}

type sgRow struct {
	ID            string   `parquet:"id" json:"id"`
	Conversations []sgTurn `parquet:"conversations,list" json:"conversations"`
}

// Role and content, in the order the Hub's sets give them.
type rcTurn struct {
	Content string `parquet:"content"`
	Role    string `parquet:"role"`
}

// HuggingFaceH4/ultrachat_200k's row.
type ultraRow struct {
	Prompt   string   `parquet:"prompt"`
	PromptID string   `parquet:"prompt_id"`
	Messages []rcTurn `parquet:"messages,list"`
}

// lmsys/lmsys-chat-1m's row, less its moderation column.
type lmsysRow struct {
	ConversationID string   `parquet:"conversation_id"`
	Model          string   `parquet:"model"`
	Conversation   []rcTurn `parquet:"conversation,list"`
	Turn           int64    `parquet:"turn"`
	Language       string   `parquet:"language"`
}

// sampleConversations are n conversations of seven shapes: a system turn
// first, several turns, no human turn, an empty human turn, no answer, a
// tool turn before a user one, an empty system turn and an assistant
// greeting first.
func sampleConversations(n int) []sgRow {
	var rows []sgRow
	for i := range n {
		q, a := fmt.Sprintf("question %d?", i), fmt.Sprintf("answer %d%s", i, strings.Repeat(".", i))
		var c []sgTurn
		switch i % 7 {
		case 0:
			c = []sgTurn{{"system", "be brief"}, {"human", q}, {"gpt", a}}
		case 1:
			c = []sgTurn{{"human", q}, {"gpt", a}, {"human", "more?"}, {"gpt", "no"}}
		case 2:
			c = []sgTurn{{"gpt", a}}
		case 3:
			c = []sgTurn{{"human", " "}, {"gpt", a}}
		case 4:
			c = []sgTurn{{"human", q}}
		case 5:
			c = []sgTurn{{"tool", `{"x": 1}`}, {"user", q}, {"tool", "t"}, {"assistant", a}}
		case 6:
			c = []sgTurn{{"system", ""}, {"gpt", "hello"}, {"human", q}, {"gpt", a}}
		}
		rows = append(rows, sgRow{ID: fmt.Sprint(i), Conversations: c})
	}
	return rows
}

// shareGPTJSON is rows as a ShareGPT JSON array, row i on line i+2.
func shareGPTJSON(t *testing.T, rows []sgRow) string {
	var b strings.Builder
	b.WriteString("[\n")
	for i, r := range rows {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		if i < len(rows)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.String()
}

// roleContent is rows' turns as role and content, from read as a role.
func roleContent(rows []sgRow) [][]rcTurn {
	out := make([][]rcTurn, len(rows))
	for i, r := range rows {
		for _, tr := range r.Conversations {
			out[i] = append(out[i], rcTurn{Content: tr.Value, Role: tr.From})
		}
	}
	return out
}

// loadFile loads the data set at path as the phase would.
func loadFile(t *testing.T, path, format string, need int, needAnswer bool) (*loaded, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return loadDataset(f, path, format, need, needAnswer)
}

// asRows is l with each item's Line, a JSON array's line, as its
// conversation's row (line 2 is row 1).
func asRows(l *loaded) *loaded {
	out := &loaded{skipped: l.skipped}
	for _, it := range l.items {
		it.Line--
		out.items = append(out.items, it)
	}
	return out
}

// The same conversations as a ShareGPT JSON array and as parquet, in each
// of the Hub's layouts (ShareGPT's conversations, ultrachat's messages
// beside a prompt, lmsys's conversation), give the same items (messages,
// answer lengths, rows) and the same skips, whether all are read or only
// the first need usable ones.
func TestParquetConversationsAreTheShareGPTArrays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := sampleConversations(45)
	// With user and assistant for human and gpt: the role layouts' names.
	roleRows := sampleConversations(45)
	for i := range roleRows {
		for j, tr := range roleRows[i].Conversations {
			switch tr.From {
			case "human":
				roleRows[i].Conversations[j].From = "user"
			case "gpt":
				roleRows[i].Conversations[j].From = "assistant"
			}
		}
	}
	var ultra []ultraRow
	var lmsys []lmsysRow
	for i, c := range roleContent(roleRows) {
		ultra = append(ultra, ultraRow{Prompt: "not this prompt", PromptID: fmt.Sprint(i), Messages: c})
		lmsys = append(lmsys, lmsysRow{ConversationID: fmt.Sprint(i), Model: "m", Conversation: c, Turn: 1, Language: "English"})
	}
	sgJSON := filepath.Join(dir, "sg.json")
	roleJSON := filepath.Join(dir, "role.json")
	os.WriteFile(sgJSON, []byte(shareGPTJSON(t, rows)), 0o644)
	os.WriteFile(roleJSON, []byte(shareGPTJSON(t, roleRows)), 0o644)
	for _, tc := range []struct{ name, json, parquet string }{
		{"conversations", sgJSON, parquettest.Write(t, dir, "sg.parquet", rows, 4)},
		{"ultrachat's messages", roleJSON, parquettest.Write(t, dir, "ultra.parquet", ultra, 4)},
		{"lmsys's conversation", roleJSON, parquettest.Write(t, dir, "lmsys.parquet", lmsys, 4)},
	} {
		for _, need := range []int{0, 1, 5, 13, 30} {
			for _, needAnswer := range []bool{true, false} {
				want, err := loadFile(t, tc.json, ShareGPT, need, needAnswer)
				if err != nil {
					t.Fatal(err)
				}
				got, err := loadFile(t, tc.parquet, Parquet, need, needAnswer)
				if err != nil {
					t.Fatalf("%s, need %d: %v", tc.name, need, err)
				}
				if w := asRows(want); !reflect.DeepEqual(got, w) {
					t.Errorf("%s, need %d, needAnswer %v:\n got %+v\nwant %+v", tc.name, need, needAnswer, got, w)
				}
			}
		}
	}
	// The premise: the shapes give items with a system turn, skips of
	// each kind, and items past the first row group.
	all, _ := loadFile(t, sgJSON, ShareGPT, 0, true)
	if len(all.skipped) != 3 || len(all.items) < 20 || len(all.items[0].Messages) != 2 {
		t.Fatalf("the sample: %d items, skips %v", len(all.items), all.skipped)
	}
}

type promptRow struct {
	Prompt    string `parquet:"prompt"`
	MaxTokens *int64 `parquet:"max_tokens,optional"`
}

// A prompt column alone is one user prompt a row, with its max_tokens
// where given, as the same rows in JSONL are.
func TestParquetPromptsAreTheJSONLPrompts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var rows []promptRow
	var jsonl strings.Builder
	for i := range 20 {
		r := promptRow{Prompt: fmt.Sprintf("prompt %d\nline two", i)}
		j := map[string]any{"prompt": r.Prompt}
		if i%3 != 0 {
			n := int64(i + 1)
			r.MaxTokens, j["max_tokens"] = &n, n
		}
		rows = append(rows, r)
		b, _ := json.Marshal(j)
		jsonl.Write(append(b, '\n'))
	}
	jl := filepath.Join(dir, "p.jsonl")
	os.WriteFile(jl, []byte(jsonl.String()), 0o644)
	pq := parquettest.Write(t, dir, "p.parquet", rows, 6)
	for _, need := range []int{0, 1, 7, 20} {
		want, err := loadFile(t, jl, JSONL, need, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loadFile(t, pq, Parquet, need, true)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("need %d: %+v, %v; want %+v", need, got, err, want)
		}
	}
}

// DuckDB's file (testdata/make_duckdb_fixture.mjs wrote it and the JSON
// array beside it) gives the items the JSON array gives.
func TestParquetWrittenByDuckDBIsItsShareGPTArray(t *testing.T) {
	t.Parallel()
	for _, needAnswer := range []bool{true, false} {
		want, err := loadFile(t, filepath.Join("testdata", "sharegpt_duckdb.json"), ShareGPT, 0, needAnswer)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loadFile(t, filepath.Join("testdata", "sharegpt_duckdb.parquet"), Parquet, 0, needAnswer)
		if err != nil {
			t.Fatal(err)
		}
		// The JSON array gives each conversation 9 lines or more: compare
		// all but the line, and check the rows apart.
		rowsWant := map[bool][]int{true: {1, 2, 6}, false: {1, 2, 5, 6}}[needAnswer]
		var rowsGot []int
		for i := range got.items {
			rowsGot = append(rowsGot, got.items[i].Line)
			got.items[i].Line, want.items[i].Line = 0, 0
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(rowsGot, rowsWant) {
			t.Errorf("needAnswer %v: %+v rows %v; want %+v rows %v", needAnswer, got, rowsGot, want, rowsWant)
		}
	}
}

func TestBadParquetDataSetsAreOneLineOfBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type noColumn struct {
		Text string `parquet:"text"`
		ID   int64  `parquet:"id"`
	}
	type listPrompt struct {
		Conversations []string `parquet:"conversations,list"`
	}
	type floatMax struct {
		Prompt    string  `parquet:"prompt"`
		MaxTokens float64 `parquet:"max_tokens"`
	}
	big := int64(MaxTokens + 1)
	os.WriteFile(filepath.Join(dir, "csv.parquet"), []byte("prompt\nhello\n"), 0o644)
	for _, tc := range []struct{ name, file, want string }{
		{"no column to read", parquettest.Write(t, dir, "none.parquet", []noColumn{{"a", 1}}, 10),
			"none.parquet: no conversations, messages, conversation or prompt column (the file has: text, id)"},
		{"an empty prompt", parquettest.Write(t, dir, "empty.parquet", []promptRow{{"a", nil}, {"b", nil}, {" ", nil}}, 2), "empty.parquet: row 3: empty prompt"},
		{"max_tokens out of range", parquettest.Write(t, dir, "max.parquet", []promptRow{{"a", nil}, {"b", &big}}, 10), "max.parquet: row 2: max_tokens 10000001: want 1 to 10000000"},
		{"max_tokens not an integer", parquettest.Write(t, dir, "fmax.parquet", []floatMax{{"a", 1}}, 10), `fmax.parquet: column "max_tokens" is DOUBLE, want an integer`},
		{"conversations of strings", parquettest.Write(t, dir, "strs.parquet", []listPrompt{{[]string{"a"}}}, 10), `strs.parquet: column "conversations" has no field "from"`},
		{"not a parquet file", filepath.Join(dir, "csv.parquet"), "csv.parquet: not a parquet file"},
	} {
		_, err := loadFile(t, tc.file, Parquet, 0, true)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line of bad input containing %q", tc.name, err, tc.want)
		}
	}
}

// A dataset phase reads a parquet file by its name (format parquet), its
// first Requests items, each answer's length its output.
func TestDatasetPhaseFromParquet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parquettest.Write(t, dir, "train-00000-of-00001.parquet", sampleConversations(30), 8)
	p := mustPhase(t, `phases: [{name: d, kind: dataset, path: train-00000-of-00001.parquet, requests: 6}]`, dir)
	reqs, warns, err := p.ExpandWarn(1)
	if err != nil {
		t.Fatal(err)
	}
	// Rows 1, 2, 6, 7, 8, 9: rows 3-5 have no human turn, an empty one, no
	// answer.
	if len(reqs) != 6 || reqs[2].Line != 6 || reqs[2].Messages[0].Content != "question 5?" || reqs[2].AnswerChars != len("answer 5.....") ||
		len(warns) != 1 || !strings.Contains(warns[0], "skipped 3 unusable conversations") {
		t.Fatalf("%+v, %q", reqs, warns)
	}
	if d := p.Describe(); !strings.Contains(d, "(parquet)") {
		t.Errorf("describe: %q", d)
	}
	// Prompts without max_tokens in a phase without output_tokens: no
	// output length, said at the row.
	parquettest.Write(t, dir, "p.parquet", []promptRow{{"a", new(int64(3))}, {"b", nil}}, 10)
	p = mustPhase(t, `phases: [{name: d, kind: dataset, path: p.parquet}]`, dir)
	if _, err := p.Expand(1); err == nil || !strings.Contains(err.Error(), `p.parquet: row 2: no max_tokens, and phase "d" has no output_tokens`) {
		t.Errorf("no output length: %v", err)
	}
	// --dataset alone: one phase of all the file's usable items.
	f, err := Open("", filepath.Join(dir, "train-00000-of-00001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// Rows 0-27 are four rounds of the seven shapes, three unusable each;
	// rows 28 and 29 are usable.
	if reqs, _, err := f.Phases[0].ExpandWarn(1); err != nil || len(reqs) != 30-4*3 {
		t.Errorf("--dataset: %d requests, %v; want the 30 rows less their 12 unusable", len(reqs), err)
	}
}

// FuzzParquetDataSet: whatever the bytes, the loader gives items or one
// line of bad input, never a panic.
func FuzzParquetDataSet(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "sharegpt_duckdb.parquet"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := loadDataset(bytes.NewReader(b), "f.parquet", Parquet, 3, true)
		if err != nil && (!badinput.Is(err) || !strings.HasPrefix(err.Error(), "f.parquet: ") || strings.Contains(err.Error(), "\n")) {
			t.Fatalf("error %q: want one line of bad input naming the file", err)
		}
	})
}

// A column named as a layout's but not of its shape is passed over for the
// next layout the file has: MaziyarPanahi/orca-agentinstruct-1M-v1-cleaned-
// fixed-sharegpt holds messages beside a conversations struct (of a
// conversations list), and some sets' conversations are lists of {content,
// role}. A file whose only such column does not fit says why.
func TestParquetColumnOfAnotherShapeIsPassedOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type wrapped struct {
		Conversations []sgTurn `parquet:"conversations,list"`
	}
	type orcaRow struct {
		Messages      []rcTurn `parquet:"messages,list"`
		Split         string   `parquet:"split"`
		Conversations wrapped  `parquet:"conversations"`
	}
	type rcConversations struct {
		Conversations []rcTurn `parquet:"conversations,list"`
	}
	type part struct {
		Type string `parquet:"type"`
		Text string `parquet:"text"`
	}
	type partsTurn struct {
		Role    string `parquet:"role"`
		Content []part `parquet:"content,list"`
	}
	type partsRow struct {
		Messages []partsTurn `parquet:"messages,list"`
	}
	turns := roleContent(sampleConversations(14))
	var ultra []ultraRow
	var orca []orcaRow
	var rc []rcConversations
	for _, c := range turns {
		ultra = append(ultra, ultraRow{Messages: c})
		orca = append(orca, orcaRow{Messages: c, Split: "x", Conversations: wrapped{[]sgTurn{{"human", "not this"}, {"gpt", "no"}}}})
		rc = append(rc, rcConversations{c})
	}
	want, err := loadFile(t, parquettest.Write(t, dir, "ultra.parquet", ultra, 4), Parquet, 0, true)
	if err != nil || len(want.items) == 0 {
		t.Fatalf("%+v, %v", want, err)
	}
	for _, file := range []string{parquettest.Write(t, dir, "orca.parquet", orca, 4), parquettest.Write(t, dir, "rc.parquet", rc, 4)} {
		got, err := loadFile(t, file, Parquet, 0, true)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want %+v", filepath.Base(file), got, err, want)
		}
	}
	parts := parquettest.Write(t, dir, "parts.parquet", []partsRow{{[]partsTurn{{"user", []part{{"text", "hi"}}}}}}, 4)
	if _, err := loadFile(t, parts, Parquet, 0, true); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), `parts.parquet: column "messages.content" is a struct`) {
		t.Errorf("content of parts: %v", err)
	}
}

// A top-level system column (open-thoughts/OpenThoughts-114k, Bespoke-
// Stratos, Sky-T1: system beside conversations) is the system turn of a
// conversation that has none before its prompt, as a "system" key beside
// "conversations" is in ShareGPT JSON and JSONL.
func TestParquetSystemColumnIsTheSystemTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type sysRow struct {
		System        string   `parquet:"system" json:"system"`
		Conversations []sgTurn `parquet:"conversations,list" json:"conversations"`
	}
	rows := []sysRow{
		{"think step by step", []sgTurn{{"user", "q1"}, {"assistant", "a1"}}},
		{"think step by step", []sgTurn{{"system", "own"}, {"user", "q2"}, {"assistant", "a2"}}},
		{"", []sgTurn{{"user", "q3"}, {"assistant", "a3"}}},
	}
	want := []item{
		{Messages: []Message{{Role: "system", Content: "think step by step"}, {Role: "user", Content: "q1"}}, AnswerChars: 2, Line: 1},
		{Messages: []Message{{Role: "system", Content: "own"}, {Role: "user", Content: "q2"}}, AnswerChars: 2, Line: 2},
		{Messages: []Message{{Role: "user", Content: "q3"}}, AnswerChars: 2, Line: 3},
	}
	var jsonl, arr strings.Builder
	arr.WriteString("[")
	for i, r := range rows {
		b, _ := json.Marshal(r)
		jsonl.Write(append(b, '\n'))
		if i > 0 {
			arr.WriteString(",")
		}
		arr.Write(b)
	}
	arr.WriteString("]")
	jl, ja := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "s.json")
	os.WriteFile(jl, []byte(jsonl.String()), 0o644)
	os.WriteFile(ja, []byte(arr.String()), 0o644)
	for _, tc := range []struct{ file, format string }{
		{parquettest.Write(t, dir, "s.parquet", rows, 2), Parquet}, {jl, JSONL}, {ja, ShareGPT},
	} {
		got, err := loadFile(t, tc.file, tc.format, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got.items {
			if tc.format == ShareGPT {
				got.items[i].Line = i + 1 // all on line 1
			}
		}
		if !reflect.DeepEqual(got.items, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.format, got.items, want)
		}
	}
	// A system column of another type is not a system prompt.
	type boolSys struct {
		System        bool     `parquet:"system"`
		Conversations []sgTurn `parquet:"conversations,list"`
	}
	got, err := loadFile(t, parquettest.Write(t, dir, "b.parquet", []boolSys{{true, rows[0].Conversations}}, 2), Parquet, 0, true)
	if err != nil || len(got.items) != 1 || len(got.items[0].Messages) != 1 {
		t.Errorf("a boolean system column: %+v, %v", got, err)
	}
}

// A messages (or conversations) column of strings, each a JSON array
// (allenai/Sera-4.6-Lite-T2, microsoft/orca-agentinstruct-1M-v1), reads
// as the list would; a string that is not such an array is an error at
// its row.
func TestParquetJSONStringMessagesAreTheList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type jsonRow struct {
		Messages string `parquet:"messages"`
	}
	type sgJSONRow struct {
		Conversations string `parquet:"conversations"`
	}
	turns := roleContent(sampleConversations(14))
	var ultra []ultraRow
	var js []jsonRow
	var sg []sgJSONRow
	for _, c := range turns {
		ultra = append(ultra, ultraRow{Messages: c})
		var m, g []map[string]any
		for _, tr := range c {
			m = append(m, map[string]any{"role": tr.Role, "content": tr.Content, "extra": 1})
			g = append(g, map[string]any{"from": tr.Role, "value": tr.Content})
		}
		b, _ := json.Marshal(m)
		js = append(js, jsonRow{string(b)})
		b, _ = json.Marshal(g)
		sg = append(sg, sgJSONRow{string(b)})
	}
	want, err := loadFile(t, parquettest.Write(t, dir, "ultra.parquet", ultra, 4), Parquet, 0, true)
	if err != nil || len(want.items) == 0 {
		t.Fatalf("%+v, %v", want, err)
	}
	for _, file := range []string{parquettest.Write(t, dir, "js.parquet", js, 4), parquettest.Write(t, dir, "sg.parquet", sg, 4)} {
		got, err := loadFile(t, file, Parquet, 0, true)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want %+v", filepath.Base(file), got, err, want)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{`not json`, `bad.parquet: row 2: messages: want a JSON array of {"role": ..., "content": ...}`},
		{`[{"role": "user", "content": 5}]`, `bad.parquet: row 2: messages[0]: want "role" and "content" strings`},
		{`[{"role": "user", "content": [{"type": "bogus"}]}]`, `bad.parquet: row 2: messages[0]: content[0]: part type "bogus"`},
	} {
		file := parquettest.Write(t, dir, "bad.parquet", []jsonRow{{`[{"role": "user", "content": "q"}]`}, {tc.text}}, 4)
		if _, err := loadFile(t, file, Parquet, 0, true); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// A response column beside prompt (nvidia/HelpSteer and HelpSteer2,
// OpenHermes-2.5-llama-format) is each prompt's answer, its length the
// output as a ShareGPT answer's is; a row without one, in a phase that
// needs answers, is skipped as a conversation without an answer is.
func TestParquetResponseIsThePromptsAnswer(t *testing.T) {
	t.Parallel()
	type helpSteerRow struct {
		Prompt      string `parquet:"prompt"`
		Response    string `parquet:"response"`
		Helpfulness int64  `parquet:"helpfulness"`
	}
	dir := t.TempDir()
	file := parquettest.Write(t, dir, "train.parquet", []helpSteerRow{{"q1", "answer", 3}, {"q2", "", 1}, {"q3", "ab", 4}}, 2)
	got, err := loadFile(t, file, Parquet, 0, true)
	want := &loaded{items: []item{
		{Messages: []Message{{Role: "user", Content: "q1"}}, AnswerChars: 6, Line: 1},
		{Messages: []Message{{Role: "user", Content: "q3"}}, AnswerChars: 2, Line: 3},
	}, skipped: map[string]int{"no answer": 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
	if got, err := loadFile(t, file, Parquet, 0, false); err != nil || len(got.items) != 3 || got.items[1].AnswerChars != 0 {
		t.Errorf("no answers needed: %+v, %v", got, err)
	}
	// --dataset alone: each request's output is its answer's length.
	f, err := Open("", file)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, _, err := f.Phases[0].ExpandWarn(1); err != nil || len(reqs) != 2 || reqs[0].AnswerChars != 6 {
		t.Errorf("--dataset: %+v, %v", reqs, err)
	}
}

// A prompt column of {content, role} turns (TRL's conversational format:
// trl-lib/ultrafeedback-prompt, beside chosen and rejected in its DPO
// sets) reads as a messages column does.
func TestParquetConversationalPromptIsTheMessages(t *testing.T) {
	t.Parallel()
	type trlRow struct {
		Prompt []rcTurn `parquet:"prompt,list"`
		Chosen []rcTurn `parquet:"chosen,list"`
	}
	dir := t.TempDir()
	turns := roleContent(sampleConversations(14))
	var ultra []ultraRow
	var trl []trlRow
	for _, c := range turns {
		ultra = append(ultra, ultraRow{Messages: c})
		trl = append(trl, trlRow{Prompt: c, Chosen: []rcTurn{{"not this", "assistant"}}})
	}
	want, err := loadFile(t, parquettest.Write(t, dir, "ultra.parquet", ultra, 4), Parquet, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := loadFile(t, parquettest.Write(t, dir, "trl.parquet", trl, 4), Parquet, 0, true); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
}
