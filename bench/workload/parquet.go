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
//     from: the first user turn, the system turn before it, the next
//     assistant turn's length as the answer; other roles (tool) are passed
//     over;
//   - prompt, a string: one user prompt a row, as JSONL's prompt; a
//     string response beside it (nvidia/HelpSteer) is its answer; or a
//     list of {content, role}, as messages (TRL's conversational sets).
//
// A list column may also be a string of a JSON array of such objects.
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
// time, until need usable items (0: all rows). A row's number (1-based) is
// its item's Line. Errors are bad input "NAME: row N: what".
func loadParquet(r io.Reader, name string, need int, needAnswer bool) (*loaded, error) {
	p, err := parquetcol.OpenReader(name, r)
	if err != nil {
		return nil, parquetBad(err)
	}
	col, err := parquetLayoutOf(p)
	if err != nil {
		return nil, parquetBad(err)
	}
	out := &loaded{}
	for at := 0; at < p.Rows() && (need == 0 || len(out.items) < need); {
		n := parquetBatchRows(at-p.GroupStart(at), need-len(out.items), need == 0)
		b := p.From(at)
		if err := parquetRows(b, at, out, col, n, need, needAnswer); err != nil {
			return nil, parquetBad(err)
		}
		at += b.Limit(n)
	}
	return out, nil
}

// parquetLayoutOf is the first layout of parquetColumns the file has
// whose columns are strings (prompt) or lists of strings (a list's from
// and value), or strings of JSON (a list's column).
func parquetLayoutOf(p *parquetcol.File) (parquetLayout, error) {
	var first error
	for _, c := range parquetColumns {
		if !p.Has(c.name) {
			continue
		}
		err := parquetFits(p, false, c.name)
		if c.from != "" && err == nil {
			c.json = true
		} else if c.from != "" {
			if err = parquetFits(p, true, c.name, c.from); err == nil {
				err = parquetFits(p, true, c.name, c.value)
			}
		}
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%s: no conversations, messages, conversation or prompt column (the file has: %s)", p.Name(), p.Columns())
	}
	return parquetLayout{}, first
}

// parquetFits is nil when the column at path is strings, or with list a
// list of strings, else why not.
func parquetFits(p *parquetcol.File, list bool, path ...string) error {
	c, err := p.Column(path...)
	if err != nil {
		return err
	}
	if c.List != list || c.Kind != parquetcol.String {
		want := "strings"
		if list {
			want = "a list of strings"
		}
		return fmt.Errorf("%s: column %q is %s, want %s", p.Name(), c.Name, c.Describe(), want)
	}
	return nil
}

// parquetBatchRows is the number of rows to read from a row into rows
// of its row group when left more items are needed (all: every row is):
// the items left, or from the second batch at least parquetBatch, and at
// least into rows. A batch decodes the rows of its group before it again
// (a file pandas wrote is one row group of all its rows), so batches grow
// with into: the rows decoded stay about twice the rows read, where
// batches of a fixed size would decode a million-row group's rows some
// thousand times over.
func parquetBatchRows(into, left int, all bool) int {
	switch {
	case all:
		return max(parquetBatch*4, into)
	case into == 0 && left > 0:
		return left
	}
	return max(left, parquetBatch, into)
}

// parquetRows reads the n rows of p from its start, row at (0-based),
// into out, by the column c, stopping at need items.
func parquetRows(p *parquetcol.File, at int, out *loaded, c parquetLayout, n, need int, needAnswer bool) error {
	maxTokens, err := parquetMaxTokens(p, n)
	if err != nil {
		return err
	}
	var prompts, responses, system []string
	var from, value [][]string
	switch {
	case c.from == "":
		if prompts, err = p.Strings(n, false, c.name); err == nil && parquetFits(p, false, "response") == nil {
			responses, err = p.Strings(n, false, "response")
		}
	case c.json:
		from, value, err = parquetJSONTurns(p, at, c, n)
	default:
		if from, err = p.StringLists(n, c.name, c.from); err == nil {
			value, err = p.StringLists(n, c.name, c.value)
		}
	}
	if err == nil && c.from != "" && parquetFits(p, false, "system") == nil {
		system, err = p.Strings(n, false, "system")
	}
	if err != nil {
		return err
	}
	for k := range p.Limit(n) {
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
			conv.Conversations = append(conv.Conversations, shareGPTTurn{From: from[k][j], Value: value[k][j]})
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

// parquetJSONTurns is the n rows' turns (from and value) of the string
// column c.name, each a JSON array of objects with c.from and c.value
// strings (null or missing: ""; a null row: no turns).
func parquetJSONTurns(p *parquetcol.File, at int, c parquetLayout, n int) (from, value [][]string, err error) {
	texts, err := p.Strings(n, false, c.name)
	if err != nil {
		return nil, nil, err
	}
	from, value = make([][]string, len(texts)), make([][]string, len(texts))
	for k, t := range texts {
		if t == "" {
			continue
		}
		var turns []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(t), &turns); err != nil {
			return nil, nil, rowErr(p, at+k+1, "%s: want a JSON array of {%q: ..., %q: ...}: %s", c.name, c.from, c.value, text.OneLine(strings.TrimPrefix(err.Error(), "json: ")))
		}
		for j, turn := range turns {
			f, okF := jsonString(turn[c.from])
			v, okV := jsonString(turn[c.value])
			if !okF || !okV {
				return nil, nil, rowErr(p, at+k+1, "%s[%d]: want %q and %q strings", c.name, j, c.from, c.value)
			}
			from[k], value[k] = append(from[k], f), append(value[k], v)
		}
	}
	return from, value, nil
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

// parquetMaxTokens is the n rows' max_tokens (0 where null, or all 0 when
// the file has no such column).
func parquetMaxTokens(p *parquetcol.File, n int) ([]int, error) {
	out := make([]int, p.Limit(n))
	if !p.Has("max_tokens") {
		return out, nil
	}
	c, err := p.Column("max_tokens")
	if err != nil {
		return nil, err
	}
	if c.List || c.Kind != parquetcol.Int {
		return nil, fmt.Errorf("%s: column %q is %s, want an integer", p.Name(), c.Name, c.Describe())
	}
	k := 0
	err = p.Values(c, n, func(i int, vals []parquetcol.Value) error {
		v := vals[0]
		if !v.Null && (v.Num < 1 || v.Num > MaxTokens) {
			return rowErr(p, i+1, "max_tokens %d: want 1 to %d", v.Num, MaxTokens)
		}
		out[k] = int(v.Num)
		k++
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
