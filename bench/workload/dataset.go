package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
)

// item is one usable entry of a data set.
type item struct {
	Messages []Message
	// MaxTokens is the item's own max_tokens (JSONL), 0 if none.
	MaxTokens int
	// AnswerChars is the length in bytes of a ShareGPT item's answer.
	AnswerChars int
	// Line is the item's line, or its row (1-based) in a parquet file.
	Line int
	// File is the shard the item is of, when the data set is a folder of
	// parquet shards; "" otherwise.
	File string
}

// loaded is what a loader read: the usable items, up to the number asked,
// and how many entries it skipped, by reason.
type loaded struct {
	items   []item
	skipped map[string]int
}

func (l *loaded) skip(why string) {
	if l.skipped == nil {
		l.skipped = map[string]int{}
	}
	l.skipped[why]++
}

// loadDataset streams a data set of the given format from r, named name in
// errors, and stops after need usable items (0: reads them all). With
// needAnswer a ShareGPT conversation without an answer is skipped, since
// nothing else gives its output length. Every error is bad input
// "NAME:LINE: what" ("NAME: row N: what" for parquet, read in place when r
// is a file).
func loadDataset(r io.Reader, name, format string, need int, needAnswer bool) (*loaded, error) {
	if format == Parquet {
		return loadParquet(r, name, need, needAnswer)
	}
	r = skipBOM(r)
	switch format {
	case ShareGPT:
		return loadShareGPT(r, name, need, needAnswer)
	case JSONL:
		return loadJSONL(r, name, need, needAnswer)
	}
	return loadText(r, name, need)
}

// skipBOM returns r past a UTF-8 byte order mark at its start, which a file
// saved by Windows tools (PowerShell's Out-File, Notepad's "UTF-8 with
// BOM") begins with: JSON has none, and a prompt should not start with one.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	return br
}

// lineReader counts lines of what a json.Decoder has read, keeping only
// the bytes past the last offset asked about (about the decoder's own
// buffer), so a large file streams.
type lineReader struct {
	r    io.Reader
	base int64 // offset of buf[0]
	line int   // line of buf[0], 1-based
	buf  []byte
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.buf = append(l.buf, p[:n]...)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// lineAt is the line of byte offset off, which must not be before the
// last one asked about; it drops the bytes before off.
func (l *lineReader) lineAt(off int64) int {
	k := min(max(int(off-l.base), 0), len(l.buf))
	l.line += bytes.Count(l.buf[:k], []byte{'\n'})
	l.buf = append(l.buf[:0], l.buf[k:]...)
	l.base += int64(k)
	return l.line
}

// end is the offset just past what has been read.
func (l *lineReader) end() int64 { return l.base + int64(len(l.buf)) }

// shareGPTItem is one conversation of a ShareGPT file; other keys (id,
// model, ...) are ignored.
type shareGPTItem struct {
	Conversations []shareGPTTurn `json:"conversations"`
	// System is the system prompt of a conversation without a system
	// turn, as sets such as OpenThoughts give it beside the conversation;
	// used only when a string.
	System any `json:"system"`
	// Media are the conversation's media given beside its turns, by key
	// (mediaKeys); a conversation with any is multimodal.
	Image  json.RawMessage `json:"image"`
	Images json.RawMessage `json:"images"`
	Video  json.RawMessage `json:"video"`
	Videos json.RawMessage `json:"videos"`
	Audios json.RawMessage `json:"audios"`
}

// mediaKey is the first key of c's media given beside its turns, as
// LLaVA-Instruct and ShareGPT4V give an "image" path and LLaMA-Factory's
// multimodal ShareGPT sets "images", "videos" and "audios" lists (the turns
// holding "<image>" placeholders); "" for none (absent, null, "" or []).
func (c *shareGPTItem) mediaKey() string {
	for _, m := range []struct {
		key string
		raw json.RawMessage
	}{{"image", c.Image}, {"images", c.Images}, {"video", c.Video}, {"videos", c.Videos}, {"audios", c.Audios}} {
		switch strings.Join(strings.Fields(string(m.raw)), "") {
		case "", "null", `""`, "[]":
		default:
			return m.key
		}
	}
	return ""
}

// shareGPTTurn is one turn of a ShareGPT conversation: from is human (or
// user), gpt (or assistant), system (or developer, OpenAI's newer name for
// it, as its o-series models take it) or another (passed over: tool,
// function), in any case.
type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
	// Role and Content are an OpenAI-style turn's from and value, as
	// lmsys-chat-1m and many Hub sets write "conversations" (readTurns);
	// ToolCalls and FunctionCall its calls (calledTools).
	Role         *string         `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
	// Media is the type of the first part of the turn's content that is
	// not text, where it was a list of content parts (parquet's JSON
	// turns); "" if none.
	Media string `json:"-"`
}

// readTurns reads c's OpenAI-style turns (no from, a role) as ShareGPT
// turns, their content as a JSONL message's (messageContent: a string,
// null, or a list of parts, a media part noted), and passes over an
// assistant turn that called tools (calledTools), as parquet's JSON turns
// are read (parquetJSONTurns). Its error is a bad turn's, as
// "conversations[J]: what".
func (c *shareGPTItem) readTurns() error {
	turns := c.Conversations[:0]
	for j, t := range c.Conversations {
		if t.From == "" && t.Role != nil {
			t.From = *t.Role
			if len(t.Content) > 0 {
				mc, err := messageContent(t.Content)
				if err != nil {
					return fmt.Errorf("conversations[%d]: %s", j, err)
				}
				t.Value, t.Media = mc.text, mc.media
			}
		}
		if fromIs(t.From, "assistant", "gpt") && calledTools(t.ToolCalls, t.FunctionCall) {
			continue
		}
		turns = append(turns, t)
	}
	c.Conversations = turns
	return nil
}

// item is the conversation's usable part at line: its prompt is its first
// human (or user) turn, after the system turn before it if there is one
// (else the conversation's System, if any); its answer is the next gpt (or
// assistant) turn with content. skip says why it is not
// usable ("" when it is): no human turn, media beside the turns or in the
// turns sent (multimodal), an empty human turn, or (with needAnswer) no
// answer.
func (c *shareGPTItem) item(line int, needAnswer bool) (it item, skip string) {
	it.Line = line
	human := -1
	for i, t := range c.Conversations {
		if fromIs(t.From, "human", "user") {
			human = i
			break
		}
	}
	if human < 0 {
		return it, "no human turn"
	}
	if k := c.mediaKey(); k != "" {
		return it, "multimodal content (" + k + ")"
	}
	if m := c.Conversations[human].Media; m != "" {
		return it, "multimodal content (" + m + ")"
	}
	if strings.TrimSpace(c.Conversations[human].Value) == "" {
		return it, "an empty human turn"
	}
	for _, t := range c.Conversations[:human] {
		if fromIs(t.From, "system", "developer") && (t.Value != "" || t.Media != "") {
			if t.Media != "" {
				return it, "multimodal content (" + t.Media + ")"
			}
			it.Messages = append(it.Messages, Message{Role: "system", Content: t.Value})
			break
		}
	}
	if sys, ok := c.System.(string); ok && sys != "" && len(it.Messages) == 0 {
		it.Messages = append(it.Messages, Message{Role: "system", Content: sys})
	}
	it.Messages = append(it.Messages, Message{Role: "user", Content: c.Conversations[human].Value})
	// The answer is the first assistant turn with content: an empty one is
	// a turn that only called tools (null content in OpenAI's format),
	// whose exchange the answer follows.
	for _, t := range c.Conversations[human+1:] {
		if fromIs(t.From, "gpt", "assistant") && t.Value != "" {
			it.AnswerChars = len(t.Value)
			break
		}
	}
	if needAnswer && it.AnswerChars == 0 {
		return it, "no answer"
	}
	return it, ""
}

// fromIs reports whether a turn's from is one of names, without regard
// to case (NeMo's conversions write User and Assistant).
func fromIs(from string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(from, n) {
			return true
		}
	}
	return false
}

// loadShareGPT walks a ShareGPT file's top-level array one conversation
// at a time (shareGPTItem.item says what of each is used). Conversations
// that are not usable are skipped and counted.
func loadShareGPT(r io.Reader, name string, need int, needAnswer bool) (*loaded, error) {
	lr := &lineReader{r: r, line: 1}
	dec := json.NewDecoder(lr)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if errors.As(err, new(readError)) {
			return nil, streamError(lr, name, 0, err)
		}
		return nil, badinput.Errorf("%s:%d: want a JSON array of conversations (ShareGPT)", name, lr.lineAt(dec.InputOffset()))
	}
	out := &loaded{}
	for dec.More() {
		if need > 0 && len(out.items) == need {
			return out, nil
		}
		before := dec.InputOffset()
		lr.lineAt(before)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, streamError(lr, name, before, err)
		}
		start := dec.InputOffset() - int64(len(raw))
		line := lr.lineAt(start)
		var c shareGPTItem
		if err := json.Unmarshal(raw, &c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				line += bytes.Count(raw[:min(max(int(te.Offset), 0), len(raw))], []byte{'\n'})
				what := "conversation"
				if te.Field != "" {
					what = te.Field
				}
				return nil, badinput.Errorf("%s:%d: %s: want %s, got %s", name, line, what, typeName(te.Type.String()), te.Value)
			}
			return nil, badinput.Errorf("%s:%d: %s", name, line, jsonErrText(err))
		}
		if err := c.readTurns(); err != nil {
			return nil, badinput.Errorf("%s:%d: %s", name, line, err)
		}
		it, skip := c.item(line, needAnswer)
		if skip != "" {
			out.skip(skip)
			continue
		}
		out.items = append(out.items, it)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, streamError(lr, name, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badinput.Errorf("%s:%d: data after the array of conversations", name, lr.lineAt(dec.InputOffset()))
	}
	return out, nil
}

// streamError says where a json.Decoder failed: the decoder's own offsets
// count only what it has scanned, so the bytes from the failed value's
// start (at or after from) are scanned again on their own.
func streamError(lr *lineReader, name string, from int64, err error) error {
	var re readError
	if errors.As(err, &re) {
		return badinput.Errorf("%s:%d: read: %s", name, lr.lineAt(lr.end()), re.err)
	}
	line := lr.lineAt(from)
	rest := lr.buf
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) > 0 && rest[0] == ',' {
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	}
	skipped := len(lr.buf) - len(rest)
	var v json.RawMessage
	var se *json.SyntaxError
	dec := json.NewDecoder(bytes.NewReader(rest))
	if e := dec.Decode(&v); errors.As(e, &se) {
		at := min(skipped+int(se.Offset)-1, len(lr.buf))
		return badinput.Errorf("%s:%d: %s", name, line+bytes.Count(lr.buf[:max(at, 0)], []byte{'\n'}), se)
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return badinput.Errorf("%s:%d: the file ends inside the array of conversations", name, lr.lineAt(lr.end()))
	}
	return badinput.Errorf("%s:%d: %s", name, line, text.OneLine(err.Error()))
}

// readError marks a failure of the underlying reader, not of the data.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

// lines reads r line by line, however long a line is, calling fn with each
// (without its line ending) and its number until fn says stop or returns
// an error.
func lines(r io.Reader, name string, fn func(line []byte, n int) (stop bool, err error)) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return badinput.Errorf("%s:%d: read: %s", name, n, err)
		}
		if len(b) > 0 {
			b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
			stop, ferr := fn(b, n)
			if ferr != nil {
				return ferr
			}
			if stop {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// jsonlItem is one line of a JSONL data set; other keys are ignored.
type jsonlItem struct {
	// Conversations is a ShareGPT conversation on a line of its own, as
	// many ShareGPT-format sets on the Hugging Face Hub are stored.
	Conversations *json.RawMessage `json:"conversations"`
	Prompt        *string          `json:"prompt"`
	Messages      []jsonlMessage   `json:"messages"`
	MaxTokens     *int             `json:"max_tokens"`
}

// loadJSONL reads a JSONL data set: each non-blank line {"prompt": "..."},
// {"messages": [{"role": ..., "content": ...}, ...]} (read as
// jsonlMessages says) or a ShareGPT conversation {"conversations":
// [{"from": ..., "value": ...}, ...]} (read as loadShareGPT reads one,
// needAnswer included), with an optional "max_tokens".
func loadJSONL(r io.Reader, name string, need int, needAnswer bool) (*loaded, error) {
	out := &loaded{}
	err := lines(r, name, func(b []byte, n int) (bool, error) {
		if len(bytes.TrimSpace(b)) == 0 {
			return false, nil
		}
		bad := func(format string, args ...any) (bool, error) {
			return true, badinput.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		var j jsonlItem
		if err := json.Unmarshal(b, &j); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return bad("%s: want %s, got %s", te.Field, typeName(te.Type.String()), te.Value)
			}
			return bad(`want {"prompt": "..."} or {"messages": [...]}: %s`, jsonErrText(err))
		}
		it := item{Line: n}
		switch {
		case j.Conversations != nil && (j.Prompt != nil || j.Messages != nil):
			return bad(`conversations with prompt or messages: give one`)
		case j.Prompt != nil && j.Messages != nil:
			return bad(`prompt and messages: give one`)
		case j.Conversations != nil:
			var c shareGPTItem
			if err := json.Unmarshal(b, &c); err != nil {
				return bad("conversations: want a list of {\"from\": ..., \"value\": ...}: %s", jsonErrText(err))
			}
			if err := c.readTurns(); err != nil {
				return bad("%s", err)
			}
			var skip string
			if it, skip = c.item(n, needAnswer && j.MaxTokens == nil); skip != "" {
				out.skip(skip)
				return false, nil
			}
		case j.Prompt != nil:
			if strings.TrimSpace(*j.Prompt) == "" {
				return bad("empty prompt")
			}
			it.Messages = []Message{{Role: "user", Content: *j.Prompt}}
		case len(j.Messages) > 0:
			msgs, skip, err := jsonlMessages(j.Messages)
			if err != nil {
				return bad("%s", err)
			}
			if skip != "" {
				out.skip(skip)
				return false, nil
			}
			it.Messages = msgs
		default:
			return bad(`want {"prompt": "..."} or {"messages": [...]}`)
		}
		if j.MaxTokens != nil {
			if *j.MaxTokens < 1 || *j.MaxTokens > MaxTokens {
				return bad("max_tokens %d: want 1 to %d", *j.MaxTokens, MaxTokens)
			}
			it.MaxTokens = *j.MaxTokens
		}
		out.items = append(out.items, it)
		return need > 0 && len(out.items) == need, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// jsonlMessage is one message of a JSONL line's messages; other keys
// (name, tool_calls, tool_call_id) are ignored. Content is kept raw: a
// string, null or OpenAI's list of content parts (messageContent).
type jsonlMessage struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCalls and FunctionCall are an assistant turn's calls (OpenAI's
	// and its legacy form): such a turn is passed over (calledTools).
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

// calledTools reports whether an assistant turn with these tool_calls and
// function_call fields (raw, nil where absent) called tools: a non-empty
// list, a call object. Such a turn is passed over with the tool turns that
// answer it, its content too ("Let me check."): kept, it stood before the
// assistant turn after the exchange, two assistant turns in a row, which
// chat templates that check that roles alternate (Mistral's, Gemma's)
// refuse, and it is no answer to the user turn.
func calledTools(toolCalls, functionCall json.RawMessage) bool {
	var calls []json.RawMessage
	if json.Unmarshal(toolCalls, &calls) == nil && len(calls) > 0 {
		return true
	}
	var call map[string]json.RawMessage
	return json.Unmarshal(functionCall, &call) == nil && call != nil
}

// jsonlMessages is a JSONL line's messages as they are sent, all of them
// in order (a JSONL line is the request). The roles follow the rules a
// ShareGPT conversation's turns are read by (shareGPTTurn), so that a
// conversation reads alike as JSONL and as parquet: developer is system;
// tool and function turns are passed over, as is an assistant turn that
// called tools (calledTools, whatever its content) or has no content
// (null: OpenAI logs write one that only called tools), since glmbench
// sends no tools nor tool calls for a tool turn to answer, and the
// exchange gone, the turns left still alternate. Any other role is
// refused, as a typo would be. skip says why the line is not usable (""
// when it is): a turn sent holds a part that is not text (it cannot be
// benchmarked as text, and its text alone is not the request), or no turn
// is left to send. err is a bad message, as "messages[I]: what".
func jsonlMessages(ms []jsonlMessage) (out []Message, skip string, err error) {
	media := ""
	for i, m := range ms {
		if m.Role == nil || m.Content == nil {
			return nil, "", fmt.Errorf("messages[%d]: want role and content", i)
		}
		role := *m.Role
		switch role {
		case "developer":
			role = "system"
		case "system", "user", "assistant", "tool", "function":
		default:
			return nil, "", fmt.Errorf("messages[%d]: role %q: want system, user or assistant (or developer, read as system; tool or function, passed over)", i, role)
		}
		c, err := messageContent(m.Content)
		if err != nil {
			return nil, "", fmt.Errorf("messages[%d]: %s", i, err)
		}
		if c.null && role != "assistant" && role != "tool" && role != "function" {
			return nil, "", fmt.Errorf("messages[%d]: null content: only an assistant turn (one that called tools) may have none", i)
		}
		if c.null || role == "tool" || role == "function" || role == "assistant" && calledTools(m.ToolCalls, m.FunctionCall) {
			continue
		}
		if media == "" {
			media = c.media
		}
		out = append(out, Message{Role: role, Content: c.text})
	}
	switch {
	case media != "":
		return nil, "multimodal content (" + media + ")", nil
	case len(out) == 0:
		return nil, "nothing to send", nil
	}
	return out, "", nil
}

// msgContent is a message's content read: its text, the type of its first
// part that is not text ("" if none), and whether it is null.
type msgContent struct {
	text, media string
	null        bool
}

// textParts are the content part types whose text is read, by the field
// it is in: OpenAI's chat parts (text; an assistant's refusal) and its
// Responses API's (input_text, output_text), all of which vLLM's chat path
// reads as text.
var textParts = map[string]string{"text": "text", "refusal": "refusal", "input_text": "text", "output_text": "text"}

// mediaParts are the content part types that are not text: OpenAI's chat
// (image_url, input_audio, file) and Responses (input_image, input_file)
// parts, vLLM's own (audio_url, video_url, image_embeds, audio_embeds), and
// the image, audio and video parts of Hugging Face's multimodal chat
// templates.
var mediaParts = map[string]bool{
	"image_url": true, "input_audio": true, "file": true, "input_image": true, "input_file": true,
	"audio_url": true, "video_url": true, "image_embeds": true, "audio_embeds": true,
	"image": true, "audio": true, "video": true,
}

// messageContent reads a message's content: a string, null, or a list of
// content parts {"type": ..., ...}, whose text parts are joined with "\n"
// as vLLM joins them for a chat template that takes a string
// (_parse_chat_message_content_parts in vllm/entrypoints/chat_utils.py:
// "\n".join(texts) when the message has no media), so that the text sent
// is the one the server would have made of the parts. A part of unknown or
// no type, or a text part whose text is not a string, is an error.
func messageContent(raw json.RawMessage) (c msgContent, err error) {
	var parts []json.RawMessage
	switch {
	case string(raw) == "null":
		return msgContent{null: true}, nil
	case len(raw) > 0 && raw[0] == '"':
		err = json.Unmarshal(raw, &c.text)
		return c, err
	case len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &parts) != nil:
		return c, fmt.Errorf("content: want a string or a list of parts, got %s", jsonKind(raw))
	}
	texts := make([]string, 0, len(parts))
	for k, raw := range parts {
		var p map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &p) != nil {
			return c, fmt.Errorf(`content[%d]: want a part {"type": ..., ...}, got %s`, k, jsonKind(raw))
		}
		typ, ok := jsonString(p["type"])
		field, isText := textParts[typ]
		switch {
		case !ok || typ == "":
			return c, fmt.Errorf(`content[%d]: want a part with a "type" string`, k)
		case isText:
			var s *string
			if json.Unmarshal(p[field], &s) != nil || s == nil {
				return c, fmt.Errorf("content[%d]: a part of type %q: want a %q string", k, typ, field)
			}
			texts = append(texts, *s)
		case mediaParts[typ]:
			if c.media == "" {
				c.media = typ
			}
		default:
			return c, fmt.Errorf("content[%d]: part type %q: want text, or a media part (image_url, input_audio, file, ...)", k, typ)
		}
	}
	c.text = strings.Join(texts, "\n")
	return c, nil
}

// jsonErrText is err, a JSON decoder's, as an error line shows it: one
// line, without its "json: " prefix.
func jsonErrText(err error) string {
	return text.OneLine(strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names the kind of the JSON value raw, for errors.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// loadText reads a text data set: one prompt per non-blank line.
func loadText(r io.Reader, name string, need int) (*loaded, error) {
	out := &loaded{}
	err := lines(r, name, func(b []byte, n int) (bool, error) {
		if len(bytes.TrimSpace(b)) == 0 {
			return false, nil
		}
		out.items = append(out.items, item{Line: n, Messages: []Message{{Role: "user", Content: string(b)}}})
		return need > 0 && len(out.items) == need, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
