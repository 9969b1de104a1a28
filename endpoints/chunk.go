package endpoints

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// Chunk is what the load runner needs from one streamed JSON event of
// /v1/chat/completions (or /v1/completions). It is filled by ParseChunk
// without allocating, so parsing keeps pace with thousands of streams.
type Chunk struct {
	// Content is true when any choice carries non-empty text: delta.content,
	// delta.reasoning_content (SGLang, DeepSeek), delta.reasoning (vLLM since
	// late 2025, ollama), a tool call's function name or arguments (see
	// ToolCall) or, for completions, text.
	Content bool
	// Answer is true when that text is the answer's (delta.content, a tool
	// call, or text), not only reasoning: the part max_tokens bounds on
	// every server.
	Answer bool
	// ToolCall is true when any choice carries a non-empty function name or
	// arguments string of a tool call: an entry of delta.tool_calls
	// ({index, id, type, function: {name, arguments}}), or the legacy
	// delta.function_call ({name, arguments}). A model that answers with a
	// tool call streams its output there, beside no content: OpenAI (the
	// first chunk carries id, type, the name and arguments "", the rest
	// fragments of arguments with id, type and name null or absent), vLLM
	// (DeltaToolCall in vllm/entrypoints/openai/protocol.py; for
	// tool_choice "required" the first chunk comes once the partial JSON
	// holds the name, with what arguments it has), SGLang (serving_chat.py
	// _process_tool_call_stream: the name with parameters "" first, every
	// field written, null or not) and llama.cpp (common/chat.cpp
	// common_chat_msg_diff_to_json_oaicompat: index, id and type with the
	// name, arguments always written). An entry with arguments "" and no
	// name, or a non-string value, carries nothing.
	ToolCall bool
	// Reasoning is true when any choice carries non-empty reasoning text
	// (delta.reasoning_content or delta.reasoning): the server streams its
	// reasoning, so its reasoning tokens are content events.
	Reasoning bool
	// ContentBytes is the raw JSON length of those strings (escapes included).
	ContentBytes int
	// Choices is the number of entries in "choices".
	Choices int
	// Finish is the last non-null finish_reason of any choice, "" when none.
	// It aliases the parsed input.
	Finish []byte
	// Usage is true when a non-null "usage" object was present.
	Usage bool
	// PromptTokens and CompletionTokens are its counts, 0 when a count is
	// not sound (see BadUsage).
	PromptTokens     int
	CompletionTokens int
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens:
	// how many of completion_tokens were reasoning (OpenAI, whose reasoning
	// models stream none of it; vLLM since PR 45802 and LightLLM, which
	// stream it as reasoning deltas). 0 when absent or null, or when the
	// count is not sound (see BadUsage). SGLang's own usage.reasoning_tokens
	// beside completion_tokens is not read: it streams its reasoning.
	ReasoningTokens int
	// BadUsage names the usage field that is not a sound count: a value
	// that is not a JSON integer (a fraction, an exponent, a string, null),
	// negative or over MaxUsageCount, or a missing completion_tokens. It
	// aliases the input, but for the nested reasoning count, named
	// completion_tokens_details.reasoning_tokens (whose null is not
	// reported, not bad); BadValue is the raw value (nil when missing).
	BadUsage []byte
	BadValue []byte
	// Cached is how many of the prompt's tokens the server served from its
	// prefix cache, valid only when CachedReported. It is read from the
	// first of these the chunk carries (not null): usage.prompt_tokens_details
	// .cached_tokens (OpenAI; vLLM with --enable-prompt-tokens-details;
	// SGLang with --enable-cache-report; llama.cpp since early 2026;
	// glmbench's engine), usage.prompt_cache_hit_tokens (DeepSeek's API),
	// or timings.cache_n beside a usage object (llama.cpp from late 2025).
	// None of them, or null, is not reported: never 0. A count that is not
	// sound (not a plain integer from 0 to MaxUsageCount, or more than a
	// sound prompt_tokens) is not reported either, and leaves the rest of
	// the usage as it is.
	Cached         int
	CachedReported bool
	// Error is true for an error event: a non-null top-level "error" (object
	// or string), or a top-level "object": "error" as vLLM and SGLang send it.
	Error bool
	// ErrorCode is the error's numeric "code" (or "status"), 0 when none.
	ErrorCode int
	// ErrorType is the error's "type" (TGI: the top-level "error_type"),
	// aliasing the input.
	ErrorType []byte
	// Model is the top-level "model" string as it stands between its
	// quotes, aliasing the input (nil when absent or not a string);
	// ModelEscaped is true when it holds an escape, to be decoded.
	Model        []byte
	ModelEscaped bool
}

// ErrBadJSON is returned by ParseChunk for input that is not one JSON object
// in valid UTF-8.
var ErrBadJSON = errors.New("endpoints: event is not a JSON object")

// ParseChunk scans one event's JSON. Duplicate keys resolve as encoding/json
// does, last one wins. Strings are compared undecoded except keys that contain
// escapes, which are decoded first.
func ParseChunk(b []byte, c *Chunk) error {
	*c = Chunk{}
	s := scanner{b: b}
	s.ws()
	topIsErrorObject := false
	// The cached-token candidates, resolved once the whole event is read:
	// usage's keys and timings may come in any order.
	var details, hit, cacheN, prompt cachedCount
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "choices":
			c.Content, c.Answer, c.Reasoning, c.ToolCall, c.ContentBytes, c.Choices, c.Finish = false, false, false, false, 0, 0, nil
			return s.choices(c)
		case "usage":
			c.Usage, c.PromptTokens, c.CompletionTokens, c.ReasoningTokens, c.BadUsage, c.BadValue = false, 0, 0, 0, nil, nil
			details, hit, prompt = cachedCount{}, cachedCount{}, cachedCount{}
			if s.peek() != '{' {
				// null on every chunk but the last of an OpenAI or SGLang
				// stream; any other value carries no count either.
				return s.skip()
			}
			return s.usage(c, &prompt, &details, &hit)
		case "error":
			c.Error = false
			if s.null() {
				return nil
			}
			c.Error = true
			if s.peek() == '"' {
				_, _, err := s.str()
				return err
			}
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(k []byte) error { return s.errorField(k, c) })
		case "model":
			c.Model, c.ModelEscaped = nil, false
			if s.peek() != '"' {
				return s.skip()
			}
			v, esc, err := s.str()
			c.Model, c.ModelEscaped = v, esc
			return err
		case "object":
			v, _, err := s.strOrSkip()
			topIsErrorObject = string(v) == "error"
			return err
		case "timings":
			// llama.cpp's own account, beside usage on the same chunk.
			cacheN = cachedCount{}
			return s.nested(func(k []byte) error {
				if string(k) == "cache_n" {
					return s.cachedCount(&cacheN)
				}
				return s.skip()
			})
		case "code", "type", "status":
			// Top-level error fields of {"object": "error", ...}: keep them in
			// case this turns out to be one.
			return s.errorField(key, c)
		case "error_type":
			// TGI's {"error": "...", "error_type": "overloaded"}.
			return s.errorField([]byte("type"), c)
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return ErrBadJSON
	}
	if topIsErrorObject {
		c.Error = true
	}
	if c.Usage {
		c.Cached, c.CachedReported = resolveCached(prompt, details, hit, cacheN)
	}
	return nil
}

// usage reads a "usage" object (not null) into c's counts, cleared
// before, and the cached-token candidates it holds into prompt, details
// and hit.
func (s *scanner) usage(c *Chunk, prompt, details, hit *cachedCount) error {
	c.Usage = true
	sawCompletion := false
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "prompt_tokens":
			ok, err := s.count(k, &c.PromptTokens, c)
			*prompt = cachedCount{n: c.PromptTokens, given: true, sound: ok}
			return err
		case "completion_tokens":
			sawCompletion = true
			_, err := s.count(k, &c.CompletionTokens, c)
			return err
		case "prompt_tokens_details":
			*details = cachedCount{}
			return s.nested(func(k []byte) error {
				if string(k) == "cached_tokens" {
					return s.cachedCount(details)
				}
				return s.skip()
			})
		case "prompt_cache_hit_tokens":
			return s.cachedCount(hit)
		case "completion_tokens_details":
			return s.reasoningTokens(c)
		}
		return s.skip()
	})
	if err == nil && !sawCompletion && c.BadUsage == nil {
		c.BadUsage = usageCompletionKey
	}
	return err
}

// reasoningTokens reads usage.completion_tokens_details for its
// reasoning_tokens into c.ReasoningTokens.
func (s *scanner) reasoningTokens(c *Chunk) error {
	c.ReasoningTokens = 0
	return s.nested(func(k []byte) error {
		switch {
		case string(k) != "reasoning_tokens":
			return s.skip()
		case s.null():
			// Not reported (pydantic's unset Optional), not a bad count.
			c.ReasoningTokens = 0
			return nil
		}
		_, err := s.count(usageReasoningKey, &c.ReasoningTokens, c)
		return err
	})
}

// cachedCount is one reading of a count for Chunk.Cached: given when the
// key was present and not null, sound when its value is a plain integer
// from 0 to MaxUsageCount.
type cachedCount struct {
	n            int
	given, sound bool
}

// resolveCached picks Chunk.Cached from its candidates in order of
// precedence: the first one given decides, and is reported only when it
// and prompt_tokens are sound and it is no more than prompt_tokens (every
// server counts the cached part inside prompt_tokens).
func resolveCached(prompt cachedCount, candidates ...cachedCount) (int, bool) {
	for _, cc := range candidates {
		if !cc.given {
			continue
		}
		if !cc.sound || !prompt.sound || cc.n > prompt.n {
			return 0, false
		}
		return cc.n, true
	}
	return 0, false
}

// cachedCount reads a count candidate for Chunk.Cached; null is not given.
func (s *scanner) cachedCount(cc *cachedCount) error {
	*cc = cachedCount{}
	if s.null() {
		return nil
	}
	n, _, ok, err := s.soundCount()
	*cc = cachedCount{n: n, given: true, sound: ok}
	return err
}

// nested reads an object with field, or skips any other value (null, a
// string): a server's breakdown that is not an object carries nothing.
func (s *scanner) nested(field func(key []byte) error) error {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(field)
}

// errorField reads one field of an error object.
func (s *scanner) errorField(k []byte, c *Chunk) error {
	switch string(k) {
	case "code", "status":
		switch s.peek() {
		case '"':
			v, _, err := s.str()
			if err != nil {
				return err
			}
			if n, ok := atoi(v); ok {
				c.ErrorCode = n
			}
			return nil
		case 'n':
			return s.skip()
		}
		if s.peek() == '-' || (s.peek() >= '0' && s.peek() <= '9') {
			return s.int(&c.ErrorCode)
		}
		return s.skip()
	case "type":
		v, isStr, err := s.strOrSkip()
		if isStr {
			c.ErrorType = v
		}
		return err
	}
	return s.skip()
}

// choices reads the "choices" array; null or any other value is none.
func (s *scanner) choices(c *Chunk) error {
	if s.peek() != '[' {
		return s.skip()
	}
	return s.array(func() error {
		c.Choices++
		if s.peek() != '{' {
			return s.skip()
		}
		var text, content, reasoningContent, reasoning, toolCalls, functionCall int // raw lengths, last key wins
		var finish []byte
		err := s.object(func(k []byte) error {
			switch string(k) {
			case "delta", "message":
				content, reasoningContent, reasoning, toolCalls, functionCall = 0, 0, 0, 0, 0
				if s.peek() != '{' {
					return s.skip()
				}
				return s.object(func(k []byte) error {
					switch string(k) {
					case "content":
						return s.textLen(&content)
					case "reasoning_content":
						return s.textLen(&reasoningContent)
					case "reasoning":
						return s.textLen(&reasoning)
					case "tool_calls":
						return s.toolCalls(&toolCalls)
					case "function_call":
						return s.function(&functionCall)
					}
					return s.skip()
				})
			case "text":
				return s.textLen(&text)
			case "finish_reason":
				finish = nil
				v, isStr, err := s.strOrSkip()
				if isStr && len(v) > 0 {
					finish = v
				}
				return err
			}
			return s.skip()
		})
		tool := toolCalls + functionCall
		if n := text + content + reasoningContent + reasoning + tool; n > 0 {
			c.Content = true
			c.ContentBytes += n
		}
		if text+content+tool > 0 {
			c.Answer = true
		}
		if tool > 0 {
			c.ToolCall = true
		}
		if reasoningContent+reasoning > 0 {
			c.Reasoning = true
		}
		if finish != nil {
			c.Finish = finish
		}
		return err
	})
}

// toolCalls reads delta.tool_calls and stores the raw length of the
// function names and arguments of its entries (0 for null, or any value
// that is not an array). Within an entry a repeated "function" key wins
// as encoding/json's last one does.
func (s *scanner) toolCalls(n *int) error {
	*n = 0
	if s.peek() != '[' {
		return s.skip()
	}
	return s.array(func() error {
		if s.peek() != '{' {
			return s.skip()
		}
		fn := 0
		err := s.object(func(k []byte) error {
			if string(k) == "function" {
				return s.function(&fn)
			}
			return s.skip()
		})
		*n += fn
		return err
	})
}

// function reads a tool call's function (or the legacy function_call)
// object and stores the raw length of its name and arguments strings (0
// for null, or any value that is not an object).
func (s *scanner) function(n *int) error {
	*n = 0
	if s.peek() != '{' {
		return s.skip()
	}
	var name, args int
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "name":
			return s.textLen(&name)
		case "arguments":
			return s.textLen(&args)
		}
		return s.skip()
	})
	*n = name + args
	return err
}

// textLen reads a string or null and stores its raw length (0 for null or "").
func (s *scanner) textLen(n *int) error {
	v, isStr, err := s.strOrSkip()
	*n = 0
	if isStr {
		*n = len(v)
	}
	return err
}

// scanner walks JSON without building values.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds nesting as encoding/json does, so hostile input cannot
// exhaust the stack.
const maxDepth = 10000

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) null() bool {
	if s.peek() == 'n' && s.lit("null") == nil {
		return true
	}
	return false
}

func (s *scanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return ErrBadJSON
	}
	s.i += len(w)
	return nil
}

// object reads an object, calling field with each key (decoded when it holds
// escapes) positioned at the value, which field must consume.
func (s *scanner) object(field func(key []byte) error) error {
	if empty, err := s.open('{', '}'); empty || err != nil {
		return err
	}
	for {
		if s.peek() != '"' {
			return ErrBadJSON
		}
		key, esc, err := s.str()
		if err != nil {
			return err
		}
		if esc {
			key = unescape(key)
		}
		if s.peek() != ':' {
			return ErrBadJSON
		}
		s.i++
		s.ws()
		if err := field(key); err != nil {
			return err
		}
		if more, err := s.next('}'); !more {
			return err
		}
	}
}

// array reads an array, calling elem positioned at each element.
func (s *scanner) array(elem func() error) error {
	if empty, err := s.open('[', ']'); empty || err != nil {
		return err
	}
	for {
		s.ws()
		if err := elem(); err != nil {
			return err
		}
		if more, err := s.next(']'); !more {
			return err
		}
	}
}

// open consumes the bracket o that opens an object or array and, when the
// next byte is its closing c, that too: empty reports the container done.
func (s *scanner) open(o, c byte) (empty bool, err error) {
	if s.peek() != o {
		return false, ErrBadJSON
	}
	s.i++
	if s.peek() == c {
		s.i++
		return true, nil
	}
	return false, nil
}

// next consumes what follows a member of an object or array: a ',' (more
// follow) or the closing c (the container is done).
func (s *scanner) next(c byte) (more bool, err error) {
	switch s.peek() {
	case ',':
		s.i++
		return true, nil
	case c:
		s.i++
		return false, nil
	}
	return false, ErrBadJSON
}

// str reads a string and returns its raw contents (between the quotes) and
// whether it holds escapes. It checks escapes and UTF-8 as encoding/json would
// accept them.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, ErrBadJSON
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, ErrBadJSON
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					return nil, false, ErrBadJSON
				}
				s.i += 6
			default:
				return nil, false, ErrBadJSON
			}
		case c < 0x20:
			return nil, false, ErrBadJSON
		case c >= utf8.RuneSelf:
			// Outside strings no byte above ASCII is JSON, so checking
			// here checks the whole event, at no cost to ASCII text.
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, ErrBadJSON
			}
			s.i += size
		default:
			s.i++
		}
	}
	return nil, false, ErrBadJSON
}

// MaxUsageCount is the largest token count in usage taken as sound: no
// context or generation is 100 million tokens long.
const MaxUsageCount = 100_000_000

var (
	usageCompletionKey = []byte("completion_tokens")
	// usageReasoningKey names the nested reasoning count in BadUsage.
	usageReasoningKey = []byte("completion_tokens_details.reasoning_tokens")
)

// count reads a usage count into n: a plain JSON integer from 0 to
// MaxUsageCount. Any other value (a fraction or exponent such as 5.0 or
// 1e18, a negative number, a string, null, an object) leaves n 0 and marks
// c.BadUsage with the key and the raw value. It reports whether the count
// was sound.
func (s *scanner) count(key []byte, n *int, c *Chunk) (bool, error) {
	v, raw, ok, err := s.soundCount()
	*n = v
	if err != nil || ok {
		return ok, err
	}
	if c.BadUsage == nil {
		c.BadUsage, c.BadValue = key, raw
	}
	return false, nil
}

// soundCount reads any value and reports whether it is a plain JSON
// integer from 0 to MaxUsageCount (n is 0 when it is not); raw is the value.
func (s *scanner) soundCount() (n int, raw []byte, ok bool, err error) {
	s.ws()
	start := s.i
	if err := s.skip(); err != nil {
		return 0, nil, false, err
	}
	raw = s.b[start:s.i]
	if v, ok := atoi(raw); ok && v >= 0 && v <= MaxUsageCount {
		return v, raw, true, nil
	}
	return 0, raw, false, nil
}

// strOrSkip reads a string, or skips any other value and reports it was none.
func (s *scanner) strOrSkip() ([]byte, bool, error) {
	if s.peek() == '"' {
		v, _, err := s.str()
		return v, err == nil, err
	}
	return nil, false, s.skip()
}

// int reads a number into n (fractions are truncated, as a count must be whole).
func (s *scanner) int(n *int) error {
	s.ws()
	start := s.i
	if err := s.number(); err != nil {
		return err
	}
	if v, ok := atoi(s.b[start:s.i]); ok {
		*n = v
		return nil
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err == nil && f >= -1e15 && f <= 1e15 {
		*n = int(f)
	}
	return nil
}

func (s *scanner) number() error {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		d := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			d++
		}
		return d
	}
	intStart := s.i
	if digits() == 0 || (s.b[intStart] == '0' && s.i-intStart > 1) {
		return ErrBadJSON
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return ErrBadJSON
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return ErrBadJSON
		}
	}
	if s.i == start {
		return ErrBadJSON
	}
	return nil
}

// skip consumes one value of any kind.
func (s *scanner) skip() error {
	switch s.peek() {
	case '{', '[':
		s.depth++
		defer func() { s.depth-- }()
		if s.depth > maxDepth {
			return ErrBadJSON
		}
		if s.b[s.i] == '[' {
			return s.array(s.skip)
		}
		return s.object(func([]byte) error { return s.skip() })
	case '"':
		_, _, err := s.str()
		return err
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	return s.number()
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// atoi parses a plain decimal integer of up to 15 digits.
func atoi(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// unescape decodes a JSON string body already checked by str. Only keys with
// escapes come here, which no real server sends, so it may allocate.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
			i += 4
			rr := rune(r)
			if 0xD800 <= rr && rr < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, err := strconv.ParseUint(string(raw[i+3:i+7]), 16, 32); err == nil && 0xDC00 <= lo && lo < 0xE000 {
					rr = (rr-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
					i += 6
				}
			}
			if 0xD800 <= rr && rr < 0xE000 {
				rr = utf8.RuneError
			}
			out = utf8.AppendRune(out, rr)
		default:
			out = append(out, raw[i])
		}
	}
	return out
}
