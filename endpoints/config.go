// Package endpoints knows how to reach an OpenAI-compatible serving endpoint:
// its configuration (flags or a YAML file), a streaming chat client with its
// own SSE reader and arrival timestamps, and the classification of every
// failed request into exactly one error class.
package endpoints

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/yaml"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile"
	"github.com/glmbench/glmbench/internal/text"
)

// DefaultAPIKeyEnv is the environment variable an API key is read from unless told otherwise.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// Endpoint is a resolved target. Its secrets (the API key and header values)
// are unexported and never appear in its String form, in reports or in errors.
type Endpoint struct {
	// Name is the entry's name in an endpoints file, empty when given by flags.
	Name string
	// BaseURL is the API base, such as https://host/v1, without a trailing slash.
	BaseURL string
	// Model is the model id to request; empty means "the first of /v1/models".
	Model string
	// APIKeyEnv names the variable the key came from.
	APIKeyEnv string
	// Builtin is true for the engine glmbench starts itself.
	Builtin bool
	// Trust is how an https endpoint's certificate is verified.
	Trust Trust

	apiKey  string
	headers []header
	// adminKey is the key sent on the server's admin routes (its
	// profiler's) in place of apiKey: SGLang's --admin-api-key, the only
	// key those routes take when it is set; "" sends apiKey there too.
	adminKey string
	// bodySecrets are the values --extra-body sends under a credential's
	// name (HideExtraSecrets).
	bodySecrets []string
	// found caches the secrets ready for matching (secretsToFind), with
	// what they were built from, so redaction does not rebuild them per call.
	found atomic.Pointer[foundSecrets]
}

// header is an extra request header; env names the variable its value was
// read from ("" for a value given as it is: --header, headers:).
type header struct{ name, value, env string }

// At returns a copy of the endpoint with another base URL (a route beside
// the API base, such as the server root's /tokenize), its secrets kept.
func (e *Endpoint) At(baseURL string) *Endpoint {
	return &Endpoint{Name: e.Name, BaseURL: baseURL, Model: e.Model, APIKeyEnv: e.APIKeyEnv, Builtin: e.Builtin, Trust: e.Trust, apiKey: e.apiKey, headers: e.headers, adminKey: e.adminKey, bodySecrets: e.bodySecrets}
}

// HeaderEnv maps each extra header whose value was read from the
// environment (--header-env, header_env:) to its variable: what may travel
// to an agent, which reads the value from its own environment.
func (e *Endpoint) HeaderEnv() map[string]string {
	out := map[string]string{}
	for _, h := range e.headers {
		if h.env != "" {
			out[h.name] = h.env
		}
	}
	return out
}

// LiteralHeaderNames lists the extra headers whose values were given as
// they are (--header, headers:), by name: values an agent cannot read.
func (e *Endpoint) LiteralHeaderNames() []string {
	var names []string
	for _, h := range e.headers {
		if h.env == "" {
			names = append(names, h.name)
		}
	}
	return names
}

// HeaderNames lists the extra headers by name only, as reports record them.
func (e *Endpoint) HeaderNames() []string {
	names := make([]string, 0, len(e.headers))
	for _, h := range e.headers {
		names = append(names, h.name)
	}
	return names
}

// HasKey reports whether an API key will be sent.
func (e *Endpoint) HasKey() bool { return e.apiKey != "" }

// Apply sets the authorization and extra headers on a request.
func (e *Endpoint) Apply(h http.Header) {
	if e.apiKey != "" {
		h.Set("Authorization", "Bearer "+e.apiKey)
	}
	e.applyHeaders(h)
}

// SetAdminKey makes key the one sent on the server's admin routes (the
// profiler's, ApplyAdmin) and a secret like the API key. The caller sets it
// before the endpoint is shared.
func (e *Endpoint) SetAdminKey(key string) { e.adminKey = key }

// ApplyAdmin sets an admin route's authorization and extra headers: Apply's,
// with the admin key (SetAdminKey) as the bearer token where one is set. It
// replaces an Authorization header given as an extra header too: on these
// routes the admin key is what was asked for.
func (e *Endpoint) ApplyAdmin(h http.Header) {
	e.Apply(h)
	if e.adminKey != "" {
		h.Set("Authorization", "Bearer "+e.adminKey)
	}
}

// applyHeaders sets the extra headers alone, without the API key.
func (e *Endpoint) applyHeaders(h http.Header) {
	for _, kv := range e.headers {
		h.Set(kv.name, kv.value)
	}
}

// secrets lists the endpoint's secret values, unfiltered (see secretsToFind).
func (e *Endpoint) secrets() []string {
	out := []string{e.apiKey, e.adminKey}
	for _, h := range e.headers {
		out = append(out, h.value)
	}
	out = append(out, e.bodySecrets...)
	if u, err := url.Parse(e.BaseURL); err == nil && u.User != nil {
		// A token given as the user name (https://sk-…@host/v1) is as
		// secret as a password; beside a password, the user name is a
		// name ("user", "admin") that would otherwise vanish from every
		// quoted body.
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		} else {
			out = append(out, u.User.Username())
		}
	}
	return out
}

// String names the endpoint without secrets.
func (e *Endpoint) String() string {
	u := RedactURL(e.BaseURL)
	if e.Model != "" {
		return u + " (" + e.Model + ")"
	}
	return u
}

// Flags are the endpoint flags shared by every command that talks to an endpoint.
type Flags struct {
	Endpoint  string
	Model     string
	APIKeyEnv string
	// APIKeyEnvSet is true when --api-key-env was given: then the variable must be set.
	APIKeyEnvSet bool
	Headers      []string
	// HeaderEnv is --header-env NAME=VAR (repeatable): a header whose
	// value is read from the environment variable VAR, so that it is in no
	// command line or file.
	HeaderEnv []string
	File      string
	Name      string
	// CACert is --ca-cert, a PEM bundle trusted beside the system's roots;
	// Insecure is --insecure, no verification at all. InsecureSet is true
	// when --insecure was given, even as false: then the flags' trust
	// replaces an endpoints file's, as CACert does when it is given.
	CACert      string
	Insecure    bool
	InsecureSet bool
	// ClientCert and ClientKey are --client-cert and --client-key, the
	// client certificate for a server that asks for one (mTLS); given,
	// they replace an endpoints file's client_cert and client_key.
	ClientCert, ClientKey string
	// Prefix is the flags' names' prefix, in what Resolve and the
	// endpoint's TLS failures say: "reference-" for eval compare's
	// reference (--reference-ca-cert); "" for the endpoint's own.
	Prefix string
}

// Given reports whether any endpoint was named; if not, the built-in engine is meant.
func (f Flags) Given() bool { return f.Endpoint != "" || f.File != "" || f.Name != "" }

// fileEntry is one endpoint of an endpoints YAML file.
type fileEntry struct {
	Name      string            `json:"name"`
	BaseURL   string            `json:"base_url"`
	Model     string            `json:"model"`
	APIKeyEnv string            `json:"api_key_env"`
	Headers   map[string]string `json:"headers"`
	// HeaderEnv maps a header's name to the environment variable its
	// value is read from (--header-env).
	HeaderEnv map[string]string `json:"header_env"`
	// CACert is a PEM bundle's path, relative to the file's folder unless
	// absolute (as kubeconfig's certificate paths are).
	CACert   string `json:"ca_cert"`
	Insecure bool   `json:"insecure"`
	// ClientCert and ClientKey are the client certificate's and its key's
	// PEM files (mTLS), read as CACert is.
	ClientCert string `json:"client_cert"`
	ClientKey  string `json:"client_key"`
}

type fileDoc struct {
	Endpoints []fileEntry `json:"endpoints"`
}

// Resolve turns the flags into an Endpoint, reading the YAML file when one is
// named and the API key from the environment through getenv. Every error
// is bad input (badinput.Error) and names the problem in one line.
func Resolve(f Flags, getenv func(string) string) (*Endpoint, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var entry fileEntry
	switch {
	case f.File != "" && f.Endpoint != "":
		return nil, badinput.Errorf("give either --endpoint or --endpoints/--name, not both")
	case f.File != "":
		if f.Name == "" {
			return nil, badinput.Errorf("--endpoints %s needs --name to pick an entry", f.File)
		}
		e, err := loadEntry(f.File, f.Name)
		if err != nil {
			return nil, err
		}
		entry = e
	case f.Name != "":
		return nil, badinput.Errorf("--name needs --endpoints FILE")
	default:
		entry = fileEntry{BaseURL: f.Endpoint}
	}
	if f.Model != "" {
		entry.Model = f.Model
	}
	keyEnv, mustHaveKey := entry.APIKeyEnv, entry.APIKeyEnv != ""
	if f.APIKeyEnvSet {
		keyEnv, mustHaveKey = f.APIKeyEnv, true
	}
	if keyEnv == "" {
		keyEnv = DefaultAPIKeyEnv
	}
	base, err := checkBaseURL(entry.BaseURL)
	if err != nil {
		return nil, err
	}
	trust, err := resolveTrust(f, entry)
	if err != nil {
		return nil, err
	}
	ep := &Endpoint{Name: entry.Name, BaseURL: base, Model: entry.Model, APIKeyEnv: keyEnv, Trust: trust}
	ep.apiKey = strings.TrimSpace(getenv(keyEnv))
	if mustHaveKey && ep.apiKey == "" {
		return nil, badinput.Errorf("environment variable %s (the API key) is empty or unset", ShownVar(keyEnv))
	}
	if err := ep.addHeaders(f, entry, getenv); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(ep.headers, func(h header) bool { return h.name == "Authorization" }) {
		// The header replaces the key's "Authorization: Bearer KEY".
		if mustHaveKey {
			where := "--" + f.Prefix + "api-key-env " + keyEnv
			if !f.APIKeyEnvSet {
				where = "api_key_env " + keyEnv + " in " + f.File
			}
			return nil, badinput.Errorf("an Authorization header and an API key (%s) would both be sent as Authorization: give one", where)
		}
		ep.apiKey = "" // the default variable, read unasked: not sent
	}
	return ep, nil
}

// addHeaders adds the extra headers, in the order a later one of a name
// replaces an earlier: the file's headers, its header_env, --header, then
// --header-env. A variable a header is read from must be set and not
// empty, as --api-key-env's must; an error names the variable, never a
// value. One header in two forms of one place (a file entry's headers and
// header_env, --header and --header-env) is refused: which was meant is
// not known (pflag keeps no order between two flags).
func (e *Endpoint) addHeaders(f Flags, entry fileEntry, getenv func(string) string) error {
	for _, k := range slices.Sorted(maps.Keys(entry.Headers)) {
		if err := e.addHeader(k, entry.Headers[k], ""); err != nil {
			return err
		}
	}
	fromEnv := func(name, env, where string) error {
		if !envName.MatchString(env) {
			return badinput.Errorf("%s: header %s: %s is not an environment variable's name (give NAME=VAR, VAR the variable that holds the value)", where, name, strconv.Quote(clipped(env)))
		}
		v := strings.TrimSpace(getenv(env))
		if v == "" {
			return badinput.Errorf("environment variable %s (the value of header %s, %s) is empty or unset", ShownVar(env), name, where)
		}
		return e.addHeader(name, v, env)
	}
	for _, k := range slices.Sorted(maps.Keys(entry.HeaderEnv)) {
		if err := fromEnv(k, entry.HeaderEnv[k], "header_env in "+f.File); err != nil {
			return err
		}
	}
	var byHeader, byHeaderEnv []string // the flags' header names
	for _, kv := range f.Headers {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return badinput.Errorf("--%sheader %q: want NAME=VALUE", f.Prefix, redactHeaderArg(kv))
		}
		if err := e.addHeader(strings.TrimSpace(k), v, ""); err != nil {
			return err
		}
		byHeader = append(byHeader, k)
	}
	for _, kv := range f.HeaderEnv {
		k, env, ok := strings.Cut(kv, "=")
		if !ok {
			return badinput.Errorf("--%sheader-env %s: want NAME=VAR, the header's name and the environment variable holding its value", f.Prefix, strconv.Quote(clipped(kv)))
		}
		if err := fromEnv(strings.TrimSpace(k), strings.TrimSpace(env), "--"+f.Prefix+"header-env"); err != nil {
			return err
		}
		byHeaderEnv = append(byHeaderEnv, k)
	}
	inFile := "endpoints file " + f.File + ": endpoint " + strconv.Quote(entry.Name) + ": "
	if err := givenOnce(inFile, headerSource{"headers", slices.Collect(maps.Keys(entry.Headers)), false}, headerSource{"header_env", slices.Collect(maps.Keys(entry.HeaderEnv)), false}); err != nil {
		return err
	}
	return givenOnce("", headerSource{"--" + f.Prefix + "header", byHeader, true}, headerSource{"--" + f.Prefix + "header-env", byHeaderEnv, true})
}

// headerSource is one place headers are given: an endpoints file's map
// (where two spellings of one name are two keys, in no order) or a
// repeatable flag (ordered: a later one of a name replaces an earlier).
type headerSource struct {
	where   string
	names   []string
	ordered bool
}

// givenOnce refuses a header given in both sources of one place, or twice
// in a map, in any letter case (HTTP's names are not case-sensitive).
// The names have been checked (addHeader): they are tokens, no secret.
func givenOnce(prefix string, a, b headerSource) error {
	first := map[string]string{}
	for _, s := range []headerSource{a, b} {
		mine := map[string]bool{}
		for _, n := range slices.Sorted(slices.Values(s.names)) {
			c := http.CanonicalHeaderKey(strings.TrimSpace(n))
			if mine[c] && !s.ordered {
				return badinput.Errorf("%sheader %s is given twice in %s (header names are not case-sensitive): give it once", prefix, c, s.where)
			}
			if w, ok := first[c]; ok {
				return badinput.Errorf("%sheader %s is given by both %s and %s: give it once", prefix, c, w, s.where)
			}
			mine[c] = true
		}
		for c := range mine {
			first[c] = s.where
		}
	}
	return nil
}

// IsEnvName reports whether name may be an environment variable's (see
// envName).
func IsEnvName(name string) bool { return envName.MatchString(name) }

// envName is what an environment variable's name may be (POSIX's portable
// set): a typo such as a value pasted for the name is refused.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ShownVar is a variable's name as an error may quote it: whole when it
// looks like one (OPENAI_API_KEY), else clipped. The flag that takes a
// variable's name is where a secret gets pasted by mistake, and a key can
// be a valid name (an Azure key is 32 hex digits, a GitHub token ghp_ and
// 36 letters and digits): a part of 16 characters or more with a digit in
// it is taken for a key.
func ShownVar(name string) string {
	if !envName.MatchString(name) {
		return strconv.Quote(clipped(name))
	}
	for _, part := range strings.Split(name, "_") {
		if len(part) >= 16 && strings.ContainsAny(part, "0123456789") {
			return strconv.Quote(clipped(name))
		}
	}
	return name
}

// clipped is s as an error may quote what could be a secret: its first
// four characters and "…" when it is longer than eight.
func clipped(s string) string {
	if r := []rune(s); len(r) > 8 {
		return string(r[:4]) + "…"
	}
	return s
}

// resolveTrust is the endpoint's TLS trust: the flags' when --ca-cert or
// --insecure is given (the pair is one setting, so --insecure overrides a
// file's ca_cert and --ca-cert a file's insecure: true), else the endpoints
// file's entry's. Both in one place is bad input: which was meant?
func resolveTrust(f Flags, entry fileEntry) (Trust, error) {
	t, err := resolveTrustOf(f, entry)
	if err != nil {
		return Trust{}, err
	}
	t.prefix = f.Prefix
	// The client certificate is a setting of its own: --insecure does
	// not stop a server asking for one.
	if f.ClientCert != "" || f.ClientKey != "" {
		return t.WithClient(f.ClientCert, f.ClientKey, "--"+f.Prefix+"client-cert and --"+f.Prefix+"client-key")
	}
	where := "endpoints file " + f.File + ": endpoint " + strconv.Quote(entry.Name) + ": client_cert and client_key"
	return t.WithClient(f.fromFile(entry.ClientCert), f.fromFile(entry.ClientKey), where)
}

// fromFile is the path p of an endpoints file's entry: ~/ the home
// folder, and relative to the file's folder unless absolute (as
// kubeconfig's certificate paths are).
func (f Flags) fromFile(p string) string {
	p = homePath(p)
	if p != "" && !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(f.File), p)
	}
	return p
}

func resolveTrustOf(f Flags, entry fileEntry) (Trust, error) {
	if f.CACert != "" || f.Insecure || f.InsecureSet {
		caFlag, insecureFlag := "--"+f.Prefix+"ca-cert", "--"+f.Prefix+"insecure"
		if f.CACert != "" && f.Insecure {
			return Trust{}, badinput.Errorf("%s and %s: give one (%s verifies nothing, so a CA is not used)", caFlag, insecureFlag, insecureFlag)
		}
		return LoadTrust(f.CACert, f.Insecure, caFlag)
	}
	where := "endpoints file " + f.File + ": endpoint " + strconv.Quote(entry.Name) + ": ca_cert"
	if entry.CACert != "" && entry.Insecure {
		return Trust{}, badinput.Errorf("%s and insecure: give one", where)
	}
	return LoadTrust(f.fromFile(entry.CACert), entry.Insecure, where)
}

// homePath is p with a leading ~/ (or a p of ~ alone) the home folder, as
// a shell would have made it of a flag: YAML expands nothing, and a file's
// relative path would otherwise name a folder called ~ beside the file. A
// p without, or with no home folder known, is p.
func homePath(p string) string {
	rest, ok := strings.CutPrefix(p, "~")
	if !ok || (rest != "" && rest[0] != '/' && rest[0] != filepath.Separator) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, rest)
}

func redactHeaderArg(kv string) string {
	if k, _, ok := strings.Cut(kv, "="); ok {
		return k + "=***"
	}
	if len(kv) > 8 {
		return kv[:4] + "…"
	}
	return kv
}

func (e *Endpoint) addHeader(name, value, env string) error {
	if i := strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }); name == "" || i >= 0 {
		// Only the part before the first character that is not a
		// token's: a curl-style "Authorization: Bearer TOKEN=="
		// splits at the token's "=", and the rest is the token.
		shown := name
		if i >= 0 {
			shown = name[:i] + "…"
		}
		return badinput.Errorf("header name %q is not a valid HTTP header name (give NAME=VALUE)", shown)
	}
	if strings.ContainsAny(value, "\r\n") {
		return badinput.Errorf("header %s: value holds a line break", name)
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		// net/http would refuse every request that carries it.
		return badinput.Errorf("header %s: value holds a control character", name)
	}
	name = http.CanonicalHeaderKey(name)
	e.headers = slices.DeleteFunc(e.headers, func(h header) bool { return h.name == name })
	e.headers = append(e.headers, header{name, value, env})
	return nil
}

// isTokenChar reports whether r may be in an HTTP header name (RFC 9110's
// tchar): net/http refuses a request with any other.
func isTokenChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// checkBaseURL validates a base URL and trims its trailing slash.
func checkBaseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", badinput.Errorf("no endpoint URL given")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", badinput.Errorf("endpoint URL %q is malformed: %v", RedactURL(raw), unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", badinput.Errorf("endpoint URL %q: scheme must be http or https", RedactURL(raw))
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", badinput.Errorf("endpoint URL %q has no host", RedactURL(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", badinput.Errorf("endpoint URL %q: give the API base (e.g. https://host/v1) without query or fragment", RedactURL(raw))
	}
	if route := apiRoute(u.Path); route != "" {
		base := *u
		base.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), route)
		return "", badinput.Errorf("endpoint URL %q ends in the route %s: give the API base, %s", RedactURL(raw), route, RedactURL(base.String()))
	}
	if err := checkZAIBase(u, raw); err != nil {
		return "", err
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// apiRoutes are the generation routes glmbench puts after the API base; a
// URL pasted with one of them (from a curl line, say) is a route, not a
// base. /models is not among them: Azure AI's model inference base ends in
// /models.
// /chat/completions comes first: /completions is its suffix.
var apiRoutes = []string{APIChat.Path(), APICompletions.Path()}

// apiRoute is the route path ends in, or "".
func apiRoute(path string) string {
	path = strings.TrimRight(path, "/")
	for _, r := range apiRoutes {
		if strings.HasSuffix(path, r) {
			return r
		}
	}
	return ""
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// RedactURL writes a URL without its user information: the user name as
// well as the password, since a token is often given as the user name
// (url.URL.Redacted hides only the password).
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			return u.String()
		}
		u.User = nil
		s := u.String()
		if i := strings.Index(s, "//"); i >= 0 {
			return s[:i+2] + "***@" + s[i+2:]
		}
		return s
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "***" + raw[i:]
	}
	return raw
}

func loadEntry(path, name string) (fileEntry, error) {
	b, err := boundedfile.Read(path, maxEndpointsFile, "an endpoints file")
	if err != nil {
		return fileEntry{}, badinput.Errorf("endpoints file: %v", err)
	}
	var doc fileDoc
	if err := yaml.UnmarshalStrict(b, &doc); err != nil {
		return fileEntry{}, badinput.Errorf("endpoints file %s: %v", path, text.OneLine(err.Error()))
	}
	var names []string
	var found *fileEntry
	for i := range doc.Endpoints {
		e := &doc.Endpoints[i]
		if e.Name == "" {
			return fileEntry{}, badinput.Errorf("endpoints file %s: entry %d has no name", path, i+1)
		}
		if slices.Contains(names, e.Name) {
			return fileEntry{}, badinput.Errorf("endpoints file %s: name %q appears twice", path, e.Name)
		}
		names = append(names, e.Name)
		if e.Name == name {
			found = e
		}
	}
	if found == nil {
		if len(names) == 0 {
			return fileEntry{}, badinput.Errorf("endpoints file %s lists no endpoints (want endpoints: [{name, base_url, ...}])", path)
		}
		return fileEntry{}, badinput.Errorf("endpoints file %s has no endpoint named %q (it has: %s)", path, name, strings.Join(names, ", "))
	}
	if found.BaseURL == "" {
		return fileEntry{}, badinput.Errorf("endpoints file %s: endpoint %q has no base_url", path, name)
	}
	return *found, nil
}

// maxEndpointsFile is the most bytes of an endpoints file read: a file of a thousand endpoints is under 1 MiB, so /dev/zero or a wrong
// path is refused in one line instead of read whole until out of memory.
const maxEndpointsFile = 16 << 20
