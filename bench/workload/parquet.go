package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/parquetcol"
	"github.com/glmbench/glmbench/internal/text"
)

// A parquet data set is what the Hugging Face Hub serves (and
// huggingface-cli download fetches), one conversation a row, in the first
// of these columns the file has:
//
//   - conversations, a list of {from, value}: the ShareGPT-format sets
//     (shareGPTItem.item's rules, as a ShareGPT JSON file is read), or of
//     {content, role}, as some sets name theirs;
//   - messages or conversation, a list of {content, role}:
//     HuggingFaceH4/ultrachat_200k (beside its prompt string),
//     lmsys/lmsys-chat-1m; read by the same rules, a role being a turn's
//     from: the first user turn, the system (or developer) turn before
//     it, the next assistant turn's length as the answer; other roles
//     (tool, function) are passed over, as a JSONL line's messages pass
//     them over (jsonlMessages);
//   - prompt, a string: one user prompt a row, as JSONL's prompt; a
//     string response beside it (nvidia/HelpSteer) is its answer; or a
//     list of {content, role}, as messages (TRL's conversational sets).
//
// A list column may also be a string of a JSON array of such objects.
// A turn's content is a string, or in a string column of JSON also
// OpenAI's list of content parts, read as JSONL reads them
// (messageContent; a media part in a turn sent skips the row). As a
// parquet list it would be a LIST of STRUCT {type, text} inside the list
// of turns, a list of lists, which parquetcol's cursors do not read (their
// values carry no repetition levels to tell a part's turn by), so such a
// column is refused as not of its layout's shape.
// A column not of its layout's shape is passed over (a conversations
// struct beside messages); when none fits, the first one's error is.
// An integer max_tokens column, if any, is each row's own, as JSONL's; a
// string system column beside a list, the system turn of a conversation
// without one (OpenThoughts' system prompt), as ShareGPT's "system" key.

// parquetLayout is a column a parquet data set's rows are read from, with
// a list's fields (from, value); json when the list is a string column of
// JSON arrays, as sets of long agent traces store their messages.
type parquetLayout struct {
	name, from, value string
	json              bool
}

// parquetColumns are the columns a parquet data set's rows are read from,
// in the order they are looked for.
var parquetColumns = []parquetLayout{
	{"conversations", "from", "value", false},
	{"conversations", "role", "content", false},
	{"messages", "role", "content", false},
	{"conversation", "role", "content", false},
	{"prompt", "", "", false},
	{"prompt", "role", "content", false},
}

// parquetBatch is the least number of rows read at a time once the rows
// first read (as many as the items needed) left some unusable.
const parquetBatch = 256

// loadParquet reads a parquet data set's rows from the first, a batch at a
// time (each column's rows decoded once, by a cursor), until need usable
// items (0: all rows). A row's number (1-based) is its item's Line. Errors
// are bad input "NAME: row N: what".
func loadParquet(r io.Reader, name string, need int, needAnswer bool) (*loaded, error) {
	p, err := parquetcol.OpenReader(name, r)
	if err != nil {
		return nil, parquetBad(err)
	}
	col, cur, err := parquetLayoutOf(p)
	if err != nil {
		return nil, parquetBad(err)
	}
	defer cur.close()
	if cur.maxTokens, err = parquetMaxTokensCursor(p); err != nil {
		return nil, parquetBad(err)
	}
	out := &loaded{}
	for at := 0; at < p.Rows() && (need == 0 || len(out.items) < need); {
		n := parquetBatch * 4
		if need > 0 {
			n = need - len(out.items)
			if at > 0 {
				n = max(n, parquetBatch)
			}
		}
		n = min(n, p.Rows()-at)
		if err := parquetRows(p, cur, at, out, col, n, need, needAnswer); err != nil {
			return nil, parquetBad(err)
		}
		at += n
	}
	return out, nil
}

// parquetCursors read a parquet data set's columns, each a batch at a
// time: main the layout's string column (a prompt, or JSON turns), or from
// and value its list's fields; the others nil where the file lacks them.
type parquetCursors struct {
	main, from, value, response, system, maxTokens *parquetcol.Cursor
}

// openParquetCursors opens the cursors of layout c's columns, failing
// where they are not of its shape: strings (prompt), lists of strings (a
// list's from and value), or strings of JSON (a list's column, which sets
// c.json); and of the response (beside a prompt) and system (beside a
// list) columns the file has.
func openParquetCursors(p *parquetcol.File, c *parquetLayout) (cur *parquetCursors, err error) {
	cur = &parquetCursors{}
	// optional is the cursor on the string column name, nil where it is
	// not there or not strings (not what is meant).
	optional := func(name string) *parquetcol.Cursor {
		k, _ := p.StringCursor(false, name)
		return k
	}
	if cur.main, err = p.StringCursor(false, c.name); err == nil {
		if c.from == "" {
			cur.response = optional("response")
		} else {
			c.json = true
			cur.system = optional("system")
		}
		return cur, nil
	}
	if c.from == "" {
		return cur, err
	}
	if cur.from, err = p.StringCursor(true, c.name, c.from); err == nil {
		if cur.value, err = p.StringCursor(true, c.name, c.value); err == nil {
			cur.system = optional("system")
		}
	}
	return cur, err
}

// parquetMaxTokensCursor is the cursor on the max_tokens column, nil
// where the file has none; one not of integers is an error.
func parquetMaxTokensCursor(p *parquetcol.File) (*parquetcol.Cursor, error) {
	if !p.Has("max_tokens") {
		return nil, nil
	}
	mt, err := p.Column("max_tokens")
	if err != nil {
		return nil, err
	}
	if mt.List || mt.Kind != parquetcol.Int {
		return nil, fmt.Errorf("%s: column %q is %s, want an integer", p.Name(), mt.Name, mt.Describe())
	}
	return p.Cursor(mt), nil
}

// close closes the cursors.
func (c *parquetCursors) close() {
	for _, k := range []*parquetcol.Cursor{c.main, c.from, c.value, c.response, c.system, c.maxTokens} {
		if k != nil {
			k.Close()
		}
	}
}

// parquetLayoutOf is the first layout of parquetColumns the file has
// whose columns are of its shape, with their cursors (openParquetCursors).
func parquetLayoutOf(p *parquetcol.File) (parquetLayout, *parquetCursors, error) {
	var first error
	for _, c := range parquetColumns {
		if !p.Has(c.name) {
			continue
		}
		cur, err := openParquetCursors(p, &c)
		if err == nil {
			return c, cur, nil
		}
		cur.close()
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%s: no conversations, messages, conversation or prompt column (the file has: %s)", p.Name(), p.Columns())
	}
	return parquetLayout{}, nil, first
}

// parquetRows reads the next n rows of p, from row at (0-based), into out
// by the layout c's cursors, stopping at need items.
func parquetRows(p *parquetcol.File, cur *parquetCursors, at int, out *loaded, c parquetLayout, n, need int, needAnswer bool) error {
	maxTokens, err := parquetMaxTokens(p, cur.maxTokens, n)
	if err != nil {
		return err
	}
	var prompts, responses, system []string
	var from, value, media [][]string
	switch {
	case c.from == "":
		prompts, err = cur.main.Strings(n)
	case c.json:
		from, value, media, err = parquetJSONTurns(p, cur.main, at, c, n)
	default:
		if from, err = cur.from.StringLists(n); err == nil {
			value, err = cur.value.StringLists(n)
		}
	}
	if err == nil && cur.response != nil {
		responses, err = cur.response.Strings(n)
	}
	if err == nil && cur.system != nil {
		system, err = cur.system.Strings(n)
	}
	if err != nil {
		return err
	}
	for k := range n {
		if need > 0 && len(out.items) == need {
			return nil
		}
		row := at + k + 1
		it := item{Line: row, MaxTokens: maxTokens[k]}
		if prompts != nil {
			if strings.TrimSpace(prompts[k]) == "" {
				return rowErr(p, row, "empty prompt")
			}
			it.Messages = []Message{{Role: "user", Content: prompts[k]}}
			if responses != nil {
				if it.AnswerChars = len(responses[k]); it.AnswerChars == 0 && needAnswer && it.MaxTokens == 0 {
					out.skip("no answer")
					continue
				}
			}
			out.items = append(out.items, it)
			continue
		}
		if len(from[k]) != len(value[k]) {
			return rowErr(p, row, "%s: %d %s for %d %s", c.name, len(from[k]), c.from, len(value[k]), c.value)
		}
		var conv shareGPTItem
		if system != nil {
			conv.System = system[k]
		}
		for j := range from[k] {
			tr := shareGPTTurn{From: from[k][j], Value: value[k][j]}
			if media != nil {
				tr.Media = media[k][j]
			}
			conv.Conversations = append(conv.Conversations, tr)
		}
		got, skip := conv.item(row, needAnswer && it.MaxTokens == 0)
		if skip != "" {
			out.skip(skip)
			continue
		}
		got.MaxTokens = it.MaxTokens
		out.items = append(out.items, got)
	}
	return nil
}

// parquetJSONTurns is the next n rows' turns (from and value, and the
// type of a value's first media part, "" if none) of the string column
// c.name, each a JSON array of objects with c.from and c.value strings
// (null or missing: ""; a null row: no turns), a value also being a list of
// content parts, read as JSONL's (messageContent).
func parquetJSONTurns(p *parquetcol.File, main *parquetcol.Cursor, at int, c parquetLayout, n int) (from, value, media [][]string, err error) {
	texts, err := main.Strings(n)
	if err != nil {
		return nil, nil, nil, err
	}
	from, value, media = make([][]string, len(texts)), make([][]string, len(texts)), make([][]string, len(texts))
	for k, t := range texts {
		if t == "" {
			continue
		}
		var turns []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(t), &turns); err != nil {
			return nil, nil, nil, rowErr(p, at+k+1, "%s: want a JSON array of {%q: ..., %q: ...}: %s", c.name, c.from, c.value, jsonErrText(err))
		}
		for j, turn := range turns {
			fk, vk := turnKeys(turn, c)
			f, okF := jsonString(turn[fk])
			if okF && fromIs(f, "assistant", "gpt") && calledTools(turn["tool_calls"], turn["function_call"]) {
				continue // passed over with its exchange, as JSONL's (jsonlMessages)
			}
			v, okV := jsonString(turn[vk])
			var m string
			if raw := turn[vk]; !okV && len(raw) > 0 && raw[0] == '[' {
				mc, err := messageContent(raw)
				if err != nil {
					return nil, nil, nil, rowErr(p, at+k+1, "%s[%d]: %s", c.name, j, err)
				}
				v, m, okV = mc.text, mc.media, true
			}
			if !okF || !okV {
				return nil, nil, nil, rowErr(p, at+k+1, "%s[%d]: want %q and %q strings (or a list of content parts)", c.name, j, c.from, c.value)
			}
			from[k], value[k], media[k] = append(from[k], f), append(value[k], v), append(media[k], m)
		}
	}
	return from, value, media, nil
}

// turnKeys are the keys turn, a JSON turn of layout c, is read by: c's
// from and value, or where it has no such from, the other pair's
// (ShareGPT's from and value, OpenAI's role and content), so that a
// conversations column of {role, content} turns (lmsys-chat-1m's shape)
// reads as a JSONL conversations line does (shareGPTItem.readTurns).
func turnKeys(turn map[string]json.RawMessage, c parquetLayout) (from, value string) {
	if _, ok := turn[c.from]; ok {
		return c.from, c.value
	}
	switch {
	case c.from == "from":
		if _, ok := turn["role"]; ok {
			return "role", "content"
		}
	case c.from == "role":
		if _, ok := turn["from"]; ok {
			return "from", "value"
		}
	}
	return c.from, c.value
}

// jsonString is the string raw holds ("" for null or none), and whether
// it is one.
func jsonString(raw json.RawMessage) (string, bool) {
	var s *string
	if raw == nil {
		return "", true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	if s == nil {
		return "", true
	}
	return *s, true
}

// parquetMaxTokens is the next n rows' max_tokens by the cursor k (0
// where null, or all 0 when k is nil: the file has no such column).
func parquetMaxTokens(p *parquetcol.File, k *parquetcol.Cursor, n int) ([]int, error) {
	out := make([]int, n)
	if k == nil {
		return out, nil
	}
	j := 0
	err := k.Next(n, func(i int, vals []parquetcol.Value) error {
		v := vals[0]
		if !v.Null && (v.Num < 1 || v.Num > MaxTokens) {
			return rowErr(p, i+1, "max_tokens %d: want 1 to %d", v.Num, MaxTokens)
		}
		out[j] = int(v.Num)
		j++
		return nil
	})
	return out, err
}

// rowErr is an error at row (1-based) of p.
func rowErr(p *parquetcol.File, row int, format string, args ...any) error {
	return fmt.Errorf("%s: row %d: %s", p.Name(), row, fmt.Sprintf(format, args...))
}

// parquetBad is err, the reader's (one line, naming the file) or a row's,
// as bad input.
func parquetBad(err error) error {
	if err == nil {
		return nil
	}
	return badinput.Errorf("%s", text.OneLine(err.Error()))
}
