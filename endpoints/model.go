package endpoints

import "strings"

// SameModel reports whether answered, the model a stream's chunks name,
// is the model asked for. It is when it is the same name (ASCII case
// aside) or a version of it: asked followed by "-" and a digit (a date or
// version: OpenAI answers gpt-4o-2024-08-06 for gpt-4o, Anthropic
// claude-sonnet-4-5-20250929 for its alias), by "@" (Vertex AI's
// claude-…@20250929) or by ":" (Ollama's llama3.2:latest for llama3.2);
// each compared again without an owner's prefix ("org/") on either side
// (OpenRouter's openai/gpt-4o, a Hugging Face id, a vLLM model's path).
// gpt-4o-mini for gpt-4o is another model; so is any name an alias or a
// deployment stands for (Azure's deployment names, vLLM's first
// --served-model-name for a second): the caller says which it may be.
func SameModel(asked, answered string) bool {
	if asked == "" || answered == "" || versionOf(asked, answered) {
		return true
	}
	return versionOf(lastSegment(asked), lastSegment(answered))
}

// versionOf reports whether answered is asked or a version of it (see
// SameModel).
func versionOf(asked, answered string) bool {
	if len(answered) < len(asked) || !strings.EqualFold(answered[:len(asked)], asked) {
		return false
	}
	rest := answered[len(asked):]
	switch {
	case rest == "":
		return true
	case rest[0] == '@' || rest[0] == ':':
		return len(rest) > 1
	case rest[0] == '-':
		return len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9'
	}
	return false
}

// lastSegment is name after its last "/".
func lastSegment(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}
