package evals

import (
	"strings"
	"testing"
)

func TestSplitThinkTakesALeadingThinkingBlockAsReasoning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, reasoning, content string
	}{
		{"no tag is all content", "The answer is B.", "", "The answer is B."},
		{"llama.cpp --reasoning-format none: <think>…</think> then the answer", "<think>\nA or B?\n</think>\n\nB", "<think>\nA or B?\n</think>", "\n\nB"},
		{"whitespace before the opening tag", "\n<think>x</think>B", "<think>x</think>", "B"},
		{"an unterminated block is reasoning only", "<think>\nA question with four", "<think>\nA question with four", ""},
		{"the opening tag alone, a first token, is reasoning", "<think>", "<think>", ""},
		{"DeepSeek-R1: the template opened the block, the model closes it", "Okay, A looks wrong.\n</think>\n\nC", "Okay, A looks wrong.\n</think>", "\n\nC"},
		{"Mistral's [THINK] tags", "[THINK]hmm[/THINK]D", "[THINK]hmm[/THINK]", "D"},
		{"Kimi's ◁think▷ tags", "◁think▷hmm◁/think▷A", "◁think▷hmm◁/think▷", "A"},
		{"a tag later in the content is content", "B, not <think>", "", "B, not <think>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, c := splitThink(tc.in)
			if r != tc.reasoning || c != tc.content {
				t.Fatalf("splitThink(%q) = %q, %q; want %q, %q", tc.in, r, c, tc.reasoning, tc.content)
			}
		})
	}
}

// A server that splits no reasoning out (llama.cpp with
// --reasoning-format none, a pass-through gateway) returns
// "<think>…</think>\n\nThe answer is X." as content. MMLU reads the answer
// after the block, never the reasoning's letters; on llama.cpp the first
// token is "<think>", reasoning, so chat-top-logprobs is not the route.
func TestMMLUReadsTheAnswerAfterAThinkingBlockLeftInContent(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter, _ := mmluModel(set)
	want := map[string]float64{"acc": 7.0 / 16, "acc_stem": 1, "acc_humanities": 0.5, "acc_social_sciences": 0, "acc_other": 0.25,
		"acc_subject_astronomy": 1, "acc_subject_philosophy": 0.5, "acc_subject_high_school_geography": 0, "acc_subject_nutrition": 0.25,
		NoAnswerMetric: 0}
	for _, tc := range []struct {
		name        string
		personality func(f *fakeLM)
	}{
		{"llama.cpp with chat logprobs", llamaCppLike},
		{"a chat-only gateway without logprobs", chatOnlyNoLogprobs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, func(f *fakeLM) {
				tc.personality(f)
				thinking(letter)(f)
				gen := f.generate
				f.generate = func(p string) string { return "\n\n" + gen(p) }
				f.thinkInContent = true
			})
			res := f.run("mmlu", Config{Concurrency: 4, ReasoningTokens: 256}, set)
			if res.Status != StatusOK || res.Method != MethodChatGreedy || res.N != 16 {
				t.Fatalf("%+v %+v, want ok by %s", res, res.Failure, MethodChatGreedy)
			}
			sameMetrics(t, res.Metrics, want)
			if tc.name == "llama.cpp with chat logprobs" && !strings.Contains(res.Failure.Detail, "first token is reasoning") {
				t.Errorf("detail %q: chat-top-logprobs should have seen the reasoning", res.Failure.Detail)
			}
		})
	}
}
