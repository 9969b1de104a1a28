package endpoints

import "testing"

// What real servers answer in a stream's "model" for the name they were
// asked, each the same model, so no run against them is warned of another:
//   - OpenRouter's variants (openrouter.ai/docs, model variants: ":free",
//     ":nitro", ":floor", ":exacto" and the like, routing or catalog
//     variants of the one base model) answered by the base id;
//   - Anthropic's and Mistral's "-latest" aliases answered by the dated
//     model they stand for (claude-3-5-sonnet-latest as
//     claude-3-5-sonnet-20241022);
//   - llama.cpp since PR #17668 (b7231) answering its own name whatever
//     was asked: without --alias the path given to -m, .gguf and all, on
//     Windows with backslashes;
//   - Azure OpenAI naming GPT-3.5 without its dot (gpt-35-turbo);
//   - TGI, which takes any model and documents "tgi" as the one to ask,
//     answering its --model-id.
//
// Each rule keeps another model another: a tag or size, an alias's
// sibling, another file.
func TestSameModelTakesWhatRealServersAnswer(t *testing.T) {
	for _, tc := range []struct {
		asked, answered string
		same            bool
	}{
		{"meta-llama/llama-3.2-3b-instruct:free", "meta-llama/llama-3.2-3b-instruct", true},
		{"openai/gpt-4o:nitro", "openai/gpt-4o", true},
		{"openai/gpt-4o:nitro", "openai/gpt-4o-2024-08-06", true},
		{"openai/gpt-4o:nitro", "openai/gpt-4o-mini", false},
		{"llama3.2:3b", "llama3.2:1b", false},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", true},
		{"mistral-large-latest", "mistral-large-2411", true},
		{"claude-3-5-sonnet-latest", "claude-3-5-haiku-20241022", false},
		{"qwen2.5-7b-instruct-q4_k_m", "/models/qwen2.5-7b-instruct-q4_k_m.gguf", true},
		{"gemma-3-4b-it-q8_0.gguf", `D:\LLM\GGUF\gemma-3-4b-it-q8_0.gguf`, true},
		{"qwen2.5-7b-instruct-q4_k_m", "/models/llama-3.1-8b-q4_k_m.gguf", false},
		{"gpt-3.5-turbo", "gpt-35-turbo", true},
		{"gpt-3.5-turbo", "gpt-35-turbo-0125", true},
		{"gpt-3.5-turbo", "gpt-4o", false},
		{"tgi", "meta-llama/Llama-3.1-8B-Instruct", true},
	} {
		if got := SameModel(tc.asked, tc.answered); got != tc.same {
			t.Errorf("SameModel(%q, %q) = %v, want %v", tc.asked, tc.answered, got, tc.same)
		}
	}
}
