package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/text"
	openai "github.com/sashabaranov/go-openai"
)

// Checks of streamed chat completions.

// streamsInARow is how many streams the stream check sends: a server that
// stalls or cuts a quarter of its streams or more fails there.
const streamsInARow = 4

func (s *suite) streamBody(prompt string, maxTokens int, extra map[string]any) map[string]any {
	b := s.chatBody(prompt, maxTokens, extra)
	b["stream"] = true
	return b
}

func withUsage(extra map[string]any) map[string]any {
	extra["stream_options"] = map[string]any{"include_usage": true}
	return extra
}

func checkStream(ctx context.Context, s *suite) outcome {
	// Every stream is read, past a deviation in shape: whether they all
	// yield content and end is what the checks built on streams need,
	// whatever the strict verdict.
	shape := ""
	thought, thoughtBytes := 0, int64(0)
	for k := range streamsInARow {
		st := s.stream(ctx, s.streamBody(storyPrompt, 8, map[string]any{"temperature": 0}), nil)
		if p := st.problem(); p != "" {
			return fail("stream %d of %d: %s", k+1, streamsInARow, p)
		}
		thought, thoughtBytes = thought+st.reasoningChunks, thoughtBytes+st.reasoningBytes
		if p := streamShape(st); p != "" && shape == "" {
			shape = fmt.Sprintf("stream %d of %d: %s", k+1, streamsInARow, p)
		}
	}
	if shape != "" {
		return fail("%s (each of the %d streams yields content and ends, so the checks built on streams run)", shape, streamsInARow).butProvided()
	}
	if thought > 0 {
		// A reasoning model: max_tokens 8 bounded the answer, not the
		// thinking, which run also lets through up to its bound.
		return pass("%d streams: role chunk first, content, one finish_reason, [DONE]; %d chunks of reasoning alone among them (%d KiB)",
			streamsInARow, thought, thoughtBytes>>10)
	}
	return pass("%d streams: role chunk first, content, one finish_reason, [DONE]", streamsInARow)
}

// streamShape is the first thing wrong with a stream against OpenAI's
// chat streaming format, "" when nothing is.
func streamShape(st *streamed) string {
	if p := st.problem(); p != "" {
		return p
	}
	if !st.done {
		return "the stream ended without data: [DONE]"
	}
	if !strings.HasPrefix(st.contentType, "text/event-stream") {
		return fmt.Sprintf("Content-Type %q, want text/event-stream", st.contentType)
	}
	if st.notJSON > 0 {
		return fmt.Sprintf("%d events are neither JSON nor [DONE]", st.notJSON)
	}
	ids := map[string]bool{}
	role, sawChoices, finished := false, false, false
	// The chunks summarized rather than kept share the id and object of
	// the kept ones and come before any finish_reason (streamed.summarize),
	// so the kept chunks are what this judges; c.n numbers a chunk in the
	// whole stream.
	for _, c := range st.chunks {
		ids[c.ID] = true
		if c.Object != "chat.completion.chunk" {
			return fmt.Sprintf(`chunk %d has object %q, want "chat.completion.chunk"`, c.n, c.Object)
		}
		if c.Choices == nil || len(*c.Choices) == 0 {
			continue
		}
		if !sawChoices {
			sawChoices = true
			role = (*c.Choices)[0].Delta.Role == "assistant"
		}
		for _, ch := range *c.Choices {
			if finished && (ch.Delta.content() != "" || ch.Delta.reasoning() != "") {
				return fmt.Sprintf("content in chunk %d after the finish_reason", c.n)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finished = true
			}
		}
	}
	switch f := st.finishes(); {
	case !role:
		return noRole(st)
	case len(ids) != 1:
		return fmt.Sprintf("the chunks carry %d different ids", len(ids))
	case len(f) != 1:
		return fmt.Sprintf("%d finish_reasons (%s), want one", len(f), strings.Join(f, ", "))
	case f[0] != "stop" && f[0] != "length":
		return fmt.Sprintf(`finish_reason %q, want "stop" or "length"`, f[0])
	case st.afterDone > 0:
		return fmt.Sprintf("%d events after data: [DONE]", st.afterDone)
	}
	return ""
}

// noRole words a stream whose first delta has no role "assistant", naming
// what that delta carried instead.
func noRole(st *streamed) string {
	for _, c := range st.chunks {
		if c.Choices == nil || len(*c.Choices) == 0 {
			continue
		}
		d := (*c.Choices)[0].Delta
		switch {
		case d.Role != "":
			return fmt.Sprintf(`the first chunk's delta has role %q, want "assistant"`, d.Role)
		case d.content() != "" || d.reasoning() != "":
			return fmt.Sprintf(`the first chunk's delta has no role "assistant": the stream opens with text (%q), `+
				`where OpenAI's opens with a delta of role "assistant"`, st.r.clip(d.reasoning()+d.content(), 24))
		}
		break
	}
	return `the first chunk's delta has no role "assistant"`
}

func checkStreamUsage(ctx context.Context, s *suite) outcome {
	const maxTokens = 12
	st := s.stream(ctx, s.streamBody(storyPrompt, maxTokens, withUsage(map[string]any{"temperature": 0})), nil)
	if p := st.problem(); p != "" {
		return fail("%s", p)
	}
	var at []int
	for i, c := range st.chunks {
		if c.Usage != nil {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return fail("no chunk carries usage with stream_options.include_usage")
	}
	// From here the stream has usage on some chunk, which is what glmbench
	// run reads (from any chunk) and what the checks built on this one
	// need: whatever else is wrong is a failure that provides it.
	u := st.chunks[at[len(at)-1]].Usage
	p, compared := s.streamUsageCounts(ctx, st, u, maxTokens)
	if p != "" {
		return fail("%s", p).butProvided()
	}
	counts := fmt.Sprintf("prompt %d, completion %d for %d content events", u.PromptTokens, u.CompletionTokens, st.contentEvents)
	if compared {
		counts += ", prompt as non-streamed"
	}
	// OpenAI's include_usage: "an additional chunk will be streamed before
	// the data: [DONE] message. The usage field on this chunk shows the
	// token usage statistics for the entire request, and the choices field
	// will always be an empty array. All other chunks will also include a
	// usage field, but with a null value." (openapi.yaml,
	// ChatCompletionStreamOptions). A client may rely on each part of it.
	last := st.chunks[len(st.chunks)-1]
	place := ""
	switch uc := st.chunks[at[0]]; {
	case len(at) > 1:
		place = fmt.Sprintf("%d chunks carry usage; want only the last", len(at))
	case uc.n != st.total-1:
		place = fmt.Sprintf("the usage chunk is chunk %d of %d, not the last before [DONE]", uc.n+1, st.total)
	case last.Choices == nil:
		place = "the usage chunk has no choices field; want choices: []"
	case len(*last.Choices) != 0 && finishOf(uc) != "":
		// llama.cpp's server before PR #15444 (August 2025) did this, and
		// a client of OpenAI's contract broke on it (llama.cpp issue
		// #15443).
		place = fmt.Sprintf(`usage came on the finish chunk (with finish_reason %q), not on a separate last chunk with choices []: `+
			`clients that read usage only from a choices-[] chunk, as OpenAI's include_usage contract specifies it, miss it `+
			`(glmbench run reads usage from any chunk)`, finishOf(uc))
	case len(*last.Choices) != 0:
		place = fmt.Sprintf("the usage chunk has %d choices; want choices: []", len(*last.Choices))
	}
	if place != "" {
		// A failure: the check asserts OpenAI's contract, which clients
		// are written to; that run itself is not hurt is said, and shown
		// by the checks that build on this one.
		return fail("%s; the counts are right: %s", place, counts).butProvided()
	}
	return pass("the last chunk has choices [] and usage: %s", counts)
}

// finishOf is the finish_reason a chunk carries, "" when none.
func finishOf(c chunk) string {
	if c.Choices == nil {
		return ""
	}
	for _, ch := range *c.Choices {
		if f := deref(ch.FinishReason); f != "" {
			return f
		}
	}
	return ""
}

// streamUsageCounts is what is wrong with a stream's usage u against the
// stream (of at most maxTokens) and the same messages non-streamed, ""
// when nothing is; compared says whether the non-streamed count was there
// to compare.
func (s *suite) streamUsageCounts(ctx context.Context, st *streamed, u *endpoints.Usage, maxTokens int) (problem string, compared bool) {
	if p := usageProblem(u, maxTokens); p != "" {
		return p + " in the usage chunk", false
	}
	if st.contentEvents > u.CompletionTokens {
		return fmt.Sprintf("%d content events but usage.completion_tokens %d: every event carries at least one token", st.contentEvents, u.CompletionTokens), false
	}
	if st.finish() == "length" && u.CompletionTokens != maxTokens {
		return fmt.Sprintf(`finish_reason "length" at max_tokens %d, but usage.completion_tokens %d`, maxTokens, u.CompletionTokens), false
	}
	// Non-streamed usage is the usage check's to judge; without it there
	// is nothing to compare.
	c, _, p := s.chatAnswer(ctx, s.chatBody(storyPrompt, 1, map[string]any{"temperature": 0}))
	if p != "" || c.Usage == nil {
		return "", false
	}
	if c.Usage.PromptTokens != u.PromptTokens {
		return fmt.Sprintf("streamed prompt_tokens %d, non-streamed %d for the same messages", u.PromptTokens, c.Usage.PromptTokens), true
	}
	return "", true
}

func checkMaxTokens(ctx context.Context, s *suite) outcome {
	const maxTokens = 24
	st := s.stream(ctx, s.streamBody(storyPrompt, maxTokens, withUsage(map[string]any{"ignore_eos": true})), nil)
	if st.status == http.StatusBadRequest && strings.Contains(string(st.body), "ignore_eos") {
		// OpenAI's 400 "Unrecognized request argument supplied:
		// ignore_eos". The checks that use this one run without it.
		s.eosRefused = statusLine(st.r, st.status, st.retryAfter, st.body)
		return skip("the endpoint refuses ignore_eos: %s (the checks that use this one send none)", s.eosRefused)
	}
	if p := st.problem(); p != "" {
		return fail("%s", p)
	}
	// The stream with ignore_eos ended: what the checks built on this one
	// need, whatever the counts say. Usage is read from any chunk, as
	// glmbench run reads it.
	u := st.usage()
	switch {
	case u == nil:
		return skip("no chunk of the stream carries usage, so there is no count to hold max_tokens against (stream-usage says why)").butProvided()
	case u.CompletionTokens < maxTokens && st.finish() == "stop":
		// The model stopped at its EOS: Ollama drops ignore_eos, as any
		// field its request struct lacks.
		s.eosDropped = true
		return fail("max_tokens %d with ignore_eos gave usage.completion_tokens %d, finish_reason \"stop\": the server does not honour ignore_eos, so run's requests can end before OUT (short_output counts them)", maxTokens, u.CompletionTokens).butProvided()
	case u.CompletionTokens != maxTokens:
		return fail("max_tokens %d with ignore_eos gave usage.completion_tokens %d (finish_reason %q)", maxTokens, u.CompletionTokens, st.finish()).butProvided()
	case st.finish() != "length":
		return fail(`%d tokens, but finish_reason %q, want "length"`, maxTokens, st.finish()).butProvided()
	}
	return pass("%d tokens, finish_reason length", maxTokens)
}

// concurrentStreams is how many streams run at once in the crossing check.
const concurrentStreams = 32

// Stream i of the crossing check asks for crossFirst+i tokens.
const crossFirst = 4

func checkConcurrentStreams(ctx context.Context, s *suite) outcome {
	// What "crossing" can mean with a model whose text is noise: a stream
	// answered with another request's state. Each request is made
	// recognisable by what the server must count for it, its own prompt
	// (of its own length) and its own max_tokens; text is not compared to
	// a lone answer, since real engines are not batch-invariant and may
	// answer the same request alone and in a batch differently.
	prompt := func(i int) string {
		return fmt.Sprintf("%s-%06d %s%s", s.nonce, i, strings.Repeat("tide ", i), storyPrompt)
	}
	alone := make([]int, concurrentStreams)
	for i := range alone {
		c, _, p := s.chatAnswer(ctx, s.chatBody(prompt(i), 1, map[string]any{"temperature": 0}))
		if p != "" {
			return fail("prompt %d alone: %s", i, p)
		}
		if c.Usage == nil {
			return fail("prompt %d alone: no usage", i)
		}
		alone[i] = c.Usage.PromptTokens
	}
	// Without ignore_eos a stream may stop before its max_tokens; its count
	// is then only bounded by it, unless it says it ran to the end.
	eos, note := s.ignoreEOS()
	got := make([]*streamed, concurrentStreams)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extra := withUsage(map[string]any{"temperature": 0})
			if eos {
				extra["ignore_eos"] = true
			}
			got[i] = s.stream(ctx, s.streamBody(prompt(i), crossFirst+i, extra), nil)
		}()
	}
	wg.Wait()
	full, shared := 0, 0
	var bad []string
	owner := map[string]int{}
	for i, st := range got {
		want := crossFirst + i
		if p := st.problem(); p != "" {
			bad = append(bad, fmt.Sprintf("stream %d: %s", i, p))
			continue
		}
		ids := map[string]bool{}
		for _, c := range st.chunks {
			ids[c.ID] = true
		}
		u := st.usage()
		switch {
		case len(ids) != 1:
			bad = append(bad, fmt.Sprintf("stream %d: its chunks carry %d ids", i, len(ids)))
		case u == nil:
			bad = append(bad, fmt.Sprintf("stream %d: no usage", i))
		case u.PromptTokens != alone[i]:
			bad = append(bad, fmt.Sprintf("stream %d: prompt_tokens %d, but its prompt alone counts %d", i, u.PromptTokens, alone[i]))
		case eos && u.CompletionTokens != want:
			bad = append(bad, fmt.Sprintf("stream %d: max_tokens %d with ignore_eos, but completion_tokens %d", i, want, u.CompletionTokens))
		case u.CompletionTokens < 1 || u.CompletionTokens > want:
			bad = append(bad, fmt.Sprintf("stream %d: max_tokens %d, but completion_tokens %d", i, want, u.CompletionTokens))
		case st.finish() == "length" && u.CompletionTokens != want:
			bad = append(bad, fmt.Sprintf(`stream %d: finish_reason "length" at max_tokens %d, but completion_tokens %d`, i, want, u.CompletionTokens))
		case st.contentEvents > want:
			bad = append(bad, fmt.Sprintf("stream %d: %d content events for %d tokens", i, st.contentEvents, want))
		}
		if u != nil && u.CompletionTokens == want {
			full++
		}
		for id := range ids {
			// Ollama draws its ids at random below 999 (chatcmpl-N), so 32
			// streams share one about 2 times in 5: streams whose own
			// prompt counts tell them apart have not crossed.
			if j, dup := owner[id]; dup && alone[j] == alone[i] {
				bad = append(bad, fmt.Sprintf("streams %d and %d share the id %s", j, i, id))
			} else if dup {
				shared++
			}
			owner[id] = i
		}
	}
	if len(bad) > 0 {
		return fail("%d of %d streams went wrong; first: %s", len(bad), concurrentStreams, bad[0])
	}
	idNote := "an id of its own"
	if shared > 0 {
		idNote = fmt.Sprintf("one id (%d share theirs with another stream: the server's ids repeat)", shared)
	}
	if !eos {
		return pass("%d streams at once, each with %s and its own prompt's count; %s, %d ran to their own max_tokens and the others stopped before it",
			concurrentStreams, idNote, note, full)
	}
	return pass("%d streams at once, each with %s, its own prompt's count and its own max_tokens", concurrentStreams, idNote)
}

// hangUpSettle is how long the disconnect check waits after hanging up.
const hangUpSettle = time.Second

func checkDisconnect(ctx context.Context, s *suite) outcome {
	// A long answer, so the server is still generating when the client
	// leaves: ignore_eos where max-tokens established it, or a model that
	// ends early may be done, its answer in the socket's buffers, before
	// the hang-up (then the check proves less, and says so). If the server
	// does not notice, later requests share the engine with abandoned
	// work; if it breaks on a write to a closed connection, they fail.
	eos, note := s.ignoreEOS()
	extra := map[string]any{}
	if eos {
		extra["ignore_eos"] = true
	}
	long := s.streamBody(storyPrompt, 1024, extra)
	for _, h := range []struct {
		when string
		now  func(*streamed) bool
	}{
		{"before its first token", func(*streamed) bool { return true }},
		{"after its first token", func(st *streamed) bool { return st.contentEvents > 0 }},
	} {
		st := s.stream(ctx, long, h.now)
		if !st.hungUp && st.problem() != "" {
			return fail("the stream to hang up on %s: %s", h.when, st.problem())
		}
	}
	// The server notices a hang-up only at its next write or poll; the
	// requests that follow must come after it has.
	select {
	case <-ctx.Done():
		return skip("interrupted")
	case <-time.After(hangUpSettle):
	}
	greedy := map[string]any{"temperature": 0}
	// "In full" is a stream that yields content and ends; its shape is the
	// stream check's.
	if p := s.stream(ctx, s.streamBody(storyPrompt, 8, greedy), nil).problem(); p != "" {
		return fail("a stream after two hang-ups: %s", p)
	}
	if _, _, p := s.chatAnswer(ctx, s.chatBody(storyPrompt, 8, greedy)); p != "" {
		return fail("a chat after two hang-ups: %s", p)
	}
	if !eos {
		return pass("after hanging up before and after the first token, a stream and a chat were answered in full (%s: a stream may have ended before the hang-up)", note)
	}
	return pass("after hanging up before and after the first token, a stream and a chat were answered in full")
}

func checkGoOpenAI(ctx context.Context, s *suite) outcome {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, errTimeout)
	defer cancel()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.cfg.Endpoint.BaseURL
	cfg.HTTPClient = s.http
	// go-openai drops a temperature of 0 (omitempty); a seed makes the
	// answer as repeatable, so a random-weight model cannot happen to
	// answer with nothing but an end token.
	seed := 1234
	stream, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model:         s.cfg.Endpoint.Model,
		Messages:      []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: storyPrompt}},
		MaxTokens:     16,
		Seed:          &seed,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		return fail("go-openai: %s", s.goOpenAIError(ctx, err))
	}
	defer stream.Close()
	var usage *openai.Usage
	content, finish := 0, ""
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail("go-openai Recv: %s", s.goOpenAIError(ctx, err))
		}
		for _, c := range r.Choices {
			if c.Delta.Content != "" || c.Delta.ReasoningContent != "" {
				content++
			}
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
		if r.Usage != nil {
			usage = r.Usage
		}
	}
	switch {
	case content == 0:
		return fail("go-openai read no content")
	case finish == "":
		return fail("go-openai read no finish_reason")
	case usage == nil:
		return fail("go-openai read no usage")
	case usage.CompletionTokens <= 0 || usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens:
		return fail("go-openai read usage prompt %d, completion %d, total %d", usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens)
	}
	return pass("%d content chunks, finish_reason %s, usage %d + %d = %d", content, finish,
		usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens)
}

// goOpenAIError words a go-openai error, the time limit named as such.
func (s *suite) goOpenAIError(ctx context.Context, err error) string {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return fmt.Sprintf("no end within %s", s.cfg.Timeout)
	}
	return s.cfg.Endpoint.Redact(text.OneLine(err.Error()))
}
