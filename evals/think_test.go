package evals

import (
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
