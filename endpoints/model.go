package endpoints

import "strings"

// SameModel reports whether answered, the model a stream's chunks name,
// is the model asked for. It is when it is the same name (ASCII case
// aside) or a version of it: asked followed by "-" and a digit (a date or
// version: OpenAI answers gpt-4o-2024-08-06 for gpt-4o, Anthropic
// claude-sonnet-4-5-20250929 for its alias), by "@" (Vertex AI's
// claude-…@20250929) or by ":" (Ollama's llama3.2:latest for llama3.2);
// each compared again without an owner's prefix ("org/", or a path's
// directories, "\" too) on either side (OpenRouter's openai/gpt-4o, a
// Hugging Face id, a vLLM model's path, llama.cpp's -m path) and without
// a ".gguf" ending (llama.cpp names its model by its file). Asked names
// that stand for one answered otherwise count too: a ":variant" answered
// by its base (OpenRouter's :free, :nitro), a "-latest" alias by a version
// of its base (Anthropic's, Mistral's), a dotted name by its dotless
// spelling (Azure's gpt-35-turbo for gpt-3.5-turbo), and "tgi", the name
// TGI documents for a server that takes any and answers its own.
// gpt-4o-mini for gpt-4o is another model; so is any name an alias or a
// deployment stands for (Azure's deployment names, an older vLLM's first
// --served-model-name for a second): the caller says which it may be.
func SameModel(asked, answered string) bool {
	if asked == "" || answered == "" || asked == tgiModel {
		return true
	}
	asked, answered = trimFold(asked, ".gguf"), trimFold(answered, ".gguf")
	return standsFor(asked, answered) || standsFor(lastSegment(asked), lastSegment(answered))
}

// tgiModel is the model TGI's documentation asks under: TGI takes any
// name and answers with its --model-id.
const tgiModel = "tgi"

// standsFor reports whether answered is asked, a version of it, or the
// model an asked variant, alias or spelling stands for (see SameModel).
func standsFor(asked, answered string) bool {
	if versionOf(asked, answered) {
		return true
	}
	// A variant or tag in asked's last segment, answered by a name without one.
	i := strings.LastIndexByte(asked, ':')
	if i > len(asked)-len(lastSegment(asked)) && !strings.ContainsRune(lastSegment(answered), ':') && versionOf(asked[:i], answered) {
		return true
	}
	if base := trimFold(asked, "-latest"); len(base) < len(asked) && versionOf(base, answered) {
		return true
	}
	if strings.Contains(asked, ".") && !strings.Contains(answered, ".") {
		return versionOf(strings.ReplaceAll(asked, ".", ""), answered)
	}
	return false
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

// trimFold is s without the ending suffix (ASCII case aside), s where it
// has none.
func trimFold(s, suffix string) string {
	if len(s) > len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)]
	}
	return s
}

// lastSegment is name after its last "/" or "\".
func lastSegment(name string) string {
	return name[strings.LastIndexAny(name, `/\`)+1:]
}
