package bench

import (
	"encoding/json"
	"testing"
)

// trtllm-serve quotes pydantic's error list, each error with its input:
// an extra_forbidden's is the refused field's value, but a before-
// validator's value_error quotes the whole body, every field glmbench
// sent among them. Only the errors' locations and messages name what was
// refused: a value_error over --extra-body's top_logprobs names that, not
// ignore_eos or stream_options, which its input merely holds.
func TestAPydanticRefusalNamesTheFieldsItsErrorsNameNotItsInputs(t *testing.T) {
	t.Parallel()
	s := Shape{IgnoreEOS: true, Extra: json.RawMessage(`{"top_logprobs":5}`)}
	for _, c := range []struct{ name, msg, want string }{
		{"a value_error quoting the whole body",
			"[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, logprobs must be true when using top_logprobs', 'input': {'ignore_eos': True, 'max_tokens': 1, 'messages': [{'content': 'x', 'role': 'user'}], 'stream': True, 'stream_options': {'include_usage': True}, 'top_logprobs': 5}, 'ctx': {'error': ValueError('logprobs must be true when using top_logprobs')}}]",
			"; the endpoint refuses a field: --extra-body adds top_logprobs"},
		{"extra_forbidden for ignore_eos", "[{'type': 'extra_forbidden', 'loc': ('body', 'ignore_eos'), 'msg': 'Extra inputs are not permitted', 'input': True}]",
			"; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out"},
		{"two errors, the second's input naming stream_options", "[{'type': 'extra_forbidden', 'loc': ('body', 'top_logprobs'), 'msg': 'Extra inputs are not permitted', 'input': 5}, {'type': 'missing', 'loc': ('body', 'model'), 'msg': 'Field required', 'input': {'stream_options': {'include_usage': True}}}]",
			"; the endpoint refuses a field: --extra-body adds top_logprobs"},
	} {
		if h := s.refusedField(true, 400, c.msg); h != c.want {
			t.Errorf("%s: hint %q, want %q", c.name, h, c.want)
		}
	}
}

// pydantic's errors reach trtllm-serve's 400 as str(RequestValidationError):
// the list's repr, or, where FastAPI's ValidationException has its own
// __str__ (the builds that name the endpoint's file and line last), "N
// validation errors:" and one error a line. An error starts "{'type': ..., 'loc': (";
// a tool in a quoted body is {'type': 'function', ...}, no error. The
// truth: only the errors' locations and messages name a switch, in either
// form, and a second tool in a value_error's quoted body neither ends its
// input nor lets stream_options, which the body merely holds, name one.
func TestAPydanticRefusalIsReadErrorByErrorInEitherFastAPIForm(t *testing.T) {
	t.Parallel()
	s := Shape{IgnoreEOS: true, Extra: json.RawMessage(`{"top_logprobs":5}`)}
	for _, c := range []struct{ name, msg, want string }{
		{"FastAPI's lines, two extra_forbidden",
			"2 validation errors:\n  {'type': 'extra_forbidden', 'loc': ('body', 'top_logprobs'), 'msg': 'Extra inputs are not permitted', 'input': 5}\n  {'type': 'extra_forbidden', 'loc': ('body', 'ignore_eos'), 'msg': 'Extra inputs are not permitted', 'input': True}\n\n  File \"/usr/local/lib/python3.12/dist-packages/tensorrt_llm/serve/openai_server.py\", line 1, in openai_chat\n    POST /v1/chat/completions",
			"; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out, --extra-body adds top_logprobs"},
		{"a value_error quoting a body with two tools",
			"[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, logprobs must be true when using top_logprobs', 'input': {'messages': [{'content': 'x', 'role': 'user'}], 'tools': [{'type': 'function', 'function': {'name': 'a'}}, {'type': 'function', 'function': {'name': 'b'}}], 'stream': True, 'stream_options': {'include_usage': True}, 'top_logprobs': 5}}]",
			"; the endpoint refuses a field: --extra-body adds top_logprobs"},
	} {
		if h := s.refusedField(true, 400, c.msg); h != c.want {
			t.Errorf("%s: hint %q, want %q", c.name, h, c.want)
		}
	}
}
