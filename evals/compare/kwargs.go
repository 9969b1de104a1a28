package compare

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/summary"
)

// templateKwargs is the field the comparison writes whose object an extra
// body's is merged into: the comparison's {"enable_thinking": false} with
// any other template kwarg --extra-body gives (DeepSeek-V3.1's template
// reads "thinking", Seed-OSS's "thinking_budget"), which a user could not
// pass otherwise. enable_thinking itself stays the comparison's.
const templateKwargs = "chat_template_kwargs"

// ExtraOwned is RequestFields less chat_template_kwargs, whose object an
// extra body's is merged into (CheckExtra checks it): the fields to give
// endpoints.ParseExtraBody.
func ExtraOwned() map[string]string {
	owned := maps.Clone(RequestFields)
	delete(owned, templateKwargs)
	return owned
}

// CheckExtra checks the chat_template_kwargs of extra, ParseExtraBody's
// object with ExtraOwned, as flag says it: a JSON object without
// enable_thinking, and named in the case the comparison names it (a
// server in Go reads names in any letter case: the body would carry the
// field twice). Its errors are bad input, in one line.
func CheckExtra(flag string, extra json.RawMessage) error {
	var fields map[string]json.RawMessage
	if len(extra) == 0 || json.Unmarshal(extra, &fields) != nil {
		return nil // none, or never ParseExtraBody's
	}
	for k := range fields {
		if k != templateKwargs && strings.EqualFold(k, templateKwargs) {
			return badinput.Errorf("%s sets %q, which glmbench writes itself as %q (a server in Go reads names in any letter case): %s", flag, k, templateKwargs, RequestFields[templateKwargs])
		}
	}
	raw, ok := fields[templateKwargs]
	if !ok {
		return nil
	}
	var kw map[string]json.RawMessage
	if json.Unmarshal(raw, &kw) != nil || kw == nil {
		return badinput.Errorf("%s: chat_template_kwargs must be a JSON object of template kwargs, such as {\"thinking\": false}", flag)
	}
	if _, ok := kw["enable_thinking"]; ok {
		return badinput.Errorf("%s sets %q, which glmbench writes itself: %s", flag, templateKwargs, RequestFields[templateKwargs])
	}
	return nil
}

// splitKwargs is extra without its chat_template_kwargs, and that field's
// object (nil for none), which the comparison's requests carry merged
// into their own (continuation) or as given (echo).
func splitKwargs(extra json.RawMessage) (json.RawMessage, map[string]json.RawMessage) {
	var fields map[string]json.RawMessage
	if len(extra) == 0 || json.Unmarshal(extra, &fields) != nil {
		return extra, nil
	}
	raw, ok := fields[templateKwargs]
	if !ok {
		return extra, nil
	}
	var kw map[string]json.RawMessage
	if json.Unmarshal(raw, &kw) != nil {
		return extra, nil
	}
	delete(fields, templateKwargs)
	if len(fields) == 0 {
		return nil, kw
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return extra, nil
	}
	return rest, kw
}

// refusedExtra names the extra body's fields (o.Extra's and its
// chat_template_kwargs), in order, that resp, a 4xx about the request
// (endpoints.RefusesRequest), names in its error message: OpenAI's 400
// "Unrecognized request argument supplied: top_k", as the evals read one.
func refusedExtra(resp *endpoints.Response, o Options) []string {
	if !endpoints.RefusesRequest(resp.Status) {
		return nil
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(o.Extra, &fields)
	names := slices.Collect(maps.Keys(fields))
	if len(o.kwargs) > 0 {
		names = append(names, templateKwargs)
	}
	slices.Sort(names)
	return endpoints.FieldsNamed(summary.ErrorMessage(resp.Body), names)
}
