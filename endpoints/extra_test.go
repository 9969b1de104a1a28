package endpoints

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

// ParseExtraBody gives the object compact with its fields in name order,
// values as given (a stop string's < and > stay as they are, numbers keep
// their digits); nothing for "" or {}.
func TestParseExtraBodyGivesTheObjectInOneCanonicalForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{"{}", ""},
		{` { "top_p" : 0.95, "chat_template_kwargs": {"enable_thinking": false} } `, `{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.95}`},
		{`{"stop": ["<|user|>"], "seed": 12345678901234567890}`, `{"seed":12345678901234567890,"stop":["<|user|>"]}`},
		{`{"a": 1, "a": 2}`, `{"a":2}`},
	} {
		got, err := ParseExtraBody("--extra-body", tc.in, nil)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// A field the caller owns is refused with what sets it instead, as is
// anything but one JSON object, each in one line of bad input.
func TestParseExtraBodyRefusesOwnedFieldsAndWhatIsNoObject(t *testing.T) {
	t.Parallel()
	owned := map[string]string{"model": "--model names it", "stream": "every request streams"}
	for _, tc := range []struct{ in, want string }{
		{`{"top_p": 1, "stream": false}`, `-x sets "stream", which glmbench writes itself: every request streams`},
		{`{"model": "m", "stream": false}`, `-x sets "model"`},
		{`[]`, `-x must be a JSON object`},
		{`"s"`, `-x must be a JSON object`},
		{`null`, `-x must be a JSON object`},
		{`{"a": 1}]`, `-x must be one JSON object`},
		{"{\"a\":\n", `-x must be a JSON object`},
	} {
		_, err := ParseExtraBody("-x", tc.in, owned)
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want one line of bad input saying %q", tc.in, err, tc.want)
		}
	}
}

// WithExtra's body is the union of both objects' fields, valid JSON, and
// every byte of body before its closing brace stays where it was.
func TestWithExtraAddsTheFieldsAtTheEnd(t *testing.T) {
	t.Parallel()
	extra := json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}`)
	for _, body := range []string{`{"model":"m","messages":[{"role":"user","content":"}"}],"stream":true}`, `{}`, `{ }`} {
		got := WithExtra([]byte(body), extra)
		var fields, want map[string]any
		if err := json.Unmarshal(got, &fields); err != nil {
			t.Fatalf("%s: %s is no JSON: %v", body, got, err)
		}
		json.Unmarshal([]byte(body), &want)
		json.Unmarshal(extra, &want)
		if !reflect.DeepEqual(fields, want) {
			t.Errorf("%s: fields %v, want %v", body, fields, want)
		}
		if end := strings.LastIndexByte(body, '}'); string(got[:end]) != body[:end] {
			t.Errorf("%s: the body's bytes moved: %s", body, got)
		}
	}
	for _, none := range []json.RawMessage{nil, json.RawMessage("null"), json.RawMessage("{}")} {
		if got := WithExtra([]byte(`{"a":1}`), none); string(got) != `{"a":1}` {
			t.Errorf("extra %q: %s", none, got)
		}
	}
	if got := ExtraFields(extra); !reflect.DeepEqual(got, []string{"chat_template_kwargs", "top_p"}) {
		t.Errorf("ExtraFields: %v", got)
	}
}

// A server written in Go (Ollama's and LocalAI's OpenAI routes, many
// gateways) reads a body with encoding/json, which matches a key to a
// field in any letter case (Unicode folding: "ſ" is "s") and lets the last
// one win: to it {"Stream": false} after glmbench's "stream" turns
// streaming off. So a key is owned whenever encoding/json would read it
// into the owned field; the truth is encoding/json's own decision.
func TestParseExtraBodyRefusesAnOwnedFieldInAnyLetterCase(t *testing.T) {
	t.Parallel()
	owned := map[string]string{"stream": "every request streams", "max_tokens": "OUT is the cap"}
	for _, key := range []string{"Stream", "STREAM", "ſtream", `\u0053tream`, "Max_Tokens", "max_tokens ", "streams", "max-tokens"} {
		var goServer struct {
			Stream    *bool `json:"stream"`
			MaxTokens *int  `json:"max_tokens"`
		}
		in := `{"` + key + `": 0}`
		json.Unmarshal([]byte(`{"`+key+`": false}`), &goServer)
		json.Unmarshal([]byte(`{"`+key+`": 7}`), &goServer)
		read := goServer.Stream != nil || goServer.MaxTokens != nil
		_, err := ParseExtraBody("-x", in, owned)
		if refused := err != nil; refused != read || err != nil && (!badinput.Is(err) || !strings.Contains(err.Error(), "which glmbench writes itself")) {
			t.Errorf("%s: encoding/json reads it as an owned field: %t; ParseExtraBody: %v", in, read, err)
		}
	}
}

// A body is UTF-8 (RFC 8259): a string of other bytes would reach every
// request, which a Python server refuses whole, and report.json.
func TestParseExtraBodyRefusesWhatIsNotUTF8(t *testing.T) {
	t.Parallel()
	_, err := ParseExtraBody("-x", "{\"stop\": \"caf\xe9\"}", nil)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "-x is not UTF-8 (at byte 13)") || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v: want one line of bad input saying it is not UTF-8", err)
	}
}

// One object written two ways is one text: nested objects' fields in name
// order and their duplicates resolved (last wins, as Python's json does),
// a string's escapes written one way (\u00e9 is é, \/ is /), so the gate
// and one label's merged runs do not refuse the same fields in another
// order. Numbers keep their digits at any depth.
func TestParseExtraBodyIsOneTextForOneObject(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{`{"chat_template_kwargs": {"enable_thinking": false, "thinking": true}}`, `{"chat_template_kwargs": {"thinking": true, "enable_thinking": false}}`},
		{`{"a": {"x": 1, "x": 2}}`, `{"a": {"x": 2}}`},
		{`{"stop": ["caf\u00e9", "a\/b"]}`, `{"stop": ["café", "a/b"]}`},
		{`{"logit_bias": {"50256": -100}, "b": [{"y": 1e400, "x": 12345678901234567890}]}`, `{"b": [{"x": 12345678901234567890, "y": 1e400}], "logit_bias": {"50256": -100}}`},
	} {
		a, errA := ParseExtraBody("-x", pair[0], nil)
		b, errB := ParseExtraBody("-x", pair[1], nil)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s: %s, %v\n%s: %s, %v", pair[0], a, errA, pair[1], b, errB)
		}
	}
	got, _ := ParseExtraBody("-x", `{"b": [{"y": 1e400, "x": 12345678901234567890}]}`, nil)
	if string(got) != `{"b":[{"x":12345678901234567890,"y":1e400}]}` {
		t.Errorf("numbers: %s", got)
	}
}

// What a report shows of an extra body holds no secret and stays one JSON
// object: a field named as a credential (api_key, x-api-key, accessToken,
// Authorization, password) has "***" for its value at any depth, and with
// an endpoint every string elsewhere is redacted of its API key and
// header values (a gateway that reads its key from the body, the key put
// under another name). Names that only hold such a word's letters
// (max_tokens_hint, prompt_cache_key, author) are data and stay.
func TestRecordedExtraHoldsNoSecret(t *testing.T) {
	t.Parallel()
	in, err := ParseExtraBody("-x", `{"api_key": "k-1", "metadata": {"x-api-key": "k-2", "accessToken": 7, "Authorization": ["Bearer k-3"], "password": {"v": "k-4"}},
		"user": "`+hostileKey+`", "stop": ["a `+hostileHeader+` b"], "prompt_cache_key": "c", "author": "me", "max_tokens_hint": 3}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"api_key":"***","author":"me","max_tokens_hint":3,"metadata":{"Authorization":"***","accessToken":"***","password":"***","x-api-key":"***"},"prompt_cache_key":"c","stop":["a *** b"],"user":"***"}`
	got := RecordedExtra(in, hostileEndpoint("http://x"))
	if string(got) != want {
		t.Errorf("recorded %s\nwant     %s", got, want)
	}
	if l := leaks(string(got)); l != nil {
		t.Errorf("%s leaks %v", got, l)
	}
	// Without an endpoint the names still hide their values; an extra
	// body with nothing to hide is as sent, and none is none.
	if got := RecordedExtra(in, nil); !strings.Contains(string(got), `"api_key":"***"`) || !strings.Contains(string(got), hostileKey) {
		t.Errorf("no endpoint: %s", got)
	}
	plain := json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}`)
	if got := RecordedExtra(plain, hostileEndpoint("http://x")); string(got) != string(plain) {
		t.Errorf("%s recorded as %s", plain, got)
	}
	if got := RecordedExtra(nil, nil); got != nil {
		t.Errorf("none recorded as %s", got)
	}
}

// Whatever --extra-body is, ParseExtraBody refuses it in one line of bad
// input or gives nothing or one JSON object that sets no owned field in
// any letter case; spliced into a body it leaves valid JSON holding both
// objects' fields, and its record is valid JSON too.
func FuzzParseExtraBody(f *testing.F) {
	for _, s := range []string{`{"top_p": 0.9}`, `{"chat_template_kwargs": {"enable_thinking": false}}`, `{"Stream": 1}`, `{"\u006dodel": 1}`,
		`{"stop": ["<|user|>"], "seed": 12345678901234567890}`, `{"a": {"b": 1, "b": 2}}`, `{"api_key": "k"}`, `[]`, `null`, "{\"a\":\"\xff\"}", `{"a":1}}`} {
		f.Add(s)
	}
	owned := map[string]string{"model": "m", "messages": "p", "stream": "s"}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"}{"}],"stream":true}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseExtraBody("-x", s, owned)
		if err != nil {
			if !badinput.Is(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if got == nil {
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(got, &fields); err != nil || len(fields) == 0 {
			t.Fatalf("%q gave %s: %v", s, got, err)
		}
		for k := range fields {
			for o := range owned {
				if strings.EqualFold(k, o) {
					t.Fatalf("%q sets %s", s, k)
				}
			}
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(WithExtra(body, got), &all); err != nil || len(all) != len(fields)+3 {
			t.Fatalf("%q spliced: %s (%v)", s, WithExtra(body, got), err)
		}
		if rec := RecordedExtra(got, nil); !json.Valid(rec) {
			t.Fatalf("%q recorded as %s", s, rec)
		}
	})
}

// An --extra-body that does not parse is quoted in its error, but not the
// value after a credential's name, however the JSON around it is broken:
// a CI job that builds the body from a secret would print it in its log.
func TestABrokenExtraBodysErrorQuotesNoCredential(t *testing.T) {
	t.Parallel()
	const key = "sk-abc123"
	for _, in := range []string{
		`{"api_key": "` + key + `",}`,
		`{"top_p": 0.9 "api_key": "` + key + `"}`,
		`{"api_key": ` + key + `}`,
		`{"Authorization" :"Bearer ` + key + `"`,
		`{"auth": {"v": "` + key + `"}`,
		`{"api_key": "sk-\"abc123`,
		`{"api_key": "` + key + `"} {"top_p": 1}`,
		`{"x-api-key": ["` + key + `"]]}`,
		`{"api_key":, "password": "` + key + `"`,
	} {
		_, err := ParseExtraBody("-x", in, nil)
		if !badinput.Is(err) || strings.Contains(err.Error(), "abc123") || !strings.Contains(err.Error(), `***`) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// A field is named where it stands as a word: "top_k" in OpenAI's
// refusal, not inside "top_k_max" or "no_top_k"; the names come back in
// the order given.
func TestFieldsNamedFindsAFieldNameStandingAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg    string
		fields []string
		want   []string
	}{
		{"Unrecognized request argument supplied: top_k", []string{"top_k", "top_p"}, []string{"top_k"}},
		{"Unrecognized request arguments supplied: top_p, top_k", []string{"top_k", "top_p"}, []string{"top_k", "top_p"}},
		{"'top_k_max' is not allowed", []string{"top_k"}, nil},
		{"no_top_k here", []string{"top_k"}, nil},
		{"top_k_max then top_k.", []string{"top_k"}, []string{"top_k"}},
		{"min_p must be in [0, 1]", []string{"min_p"}, []string{"min_p"}},
		{"", []string{"top_k"}, nil},
		{"anything", []string{""}, nil},
	} {
		if got := FieldsNamed(tc.msg, tc.fields); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FieldsNamed(%q, %q) = %q, want %q", tc.msg, tc.fields, got, tc.want)
		}
	}
}

// A value the extra body sends under a credential's name is a secret of
// the endpoint once HideExtraSecrets has it: redaction hides it as it
// hides the API key, in an endpoint made At another base too; a value
// under another name, or a short one, is not.
func TestHideExtraSecretsRedactsABodysCredential(t *testing.T) {
	t.Parallel()
	ep, err := Resolve(Flags{Endpoint: "http://127.0.0.1:1/v1"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	extra, err := ParseExtraBody("--extra-body", `{"api_key": "sk-gw-0123456789", "access_token": 123456789, "user": "team-a", "password": "x"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := `422 {"detail":[{"loc":["body","api_key"],"input":"sk-gw-0123456789"}], "token": 123456789, "user": "team-a", "password": "x"}`
	if got := ep.Redact(msg); got != msg {
		t.Fatalf("before: %s", got)
	}
	ep.HideExtraSecrets(extra)
	want := `422 {"detail":[{"loc":["body","api_key"],"input":"***"}], "token": ***, "user": "team-a", "password": "x"}`
	for _, e := range []*Endpoint{ep, ep.At("http://127.0.0.1:1")} {
		if got := e.Redact(msg); got != want {
			t.Errorf("%s: %s, want %s", e.BaseURL, got, want)
		}
	}
}
