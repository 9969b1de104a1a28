package endpoints

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// Z.ai's API (api.z.ai, open.bigmodel.cn) answers most refusals with HTTP
// 429 and says what it refuses in a business code, a string in
// {"error": {"code", "message"}} (docs.z.ai/api-reference/api-code,
// docs.bigmodel.cn/cn/api/api-code). A 429 there is a rate limit only for
// some codes: an account in arrears or a plan's usage used up is no rate to
// wait out, and an overloaded service sheds load as a 503 would.

// zaiCode is what a Z.ai business code means for glmbench: its class and
// its meaning in a few words.
type zaiCode struct {
	class   schema.Class
	meaning string
}

// zaiCodes are the business codes that class otherwise than a plain 429
// would, or that say more than it (the docs' meanings, shortened).
var zaiCodes = map[int]zaiCode{
	// Account errors (11xx): nothing a wait mends.
	1110: {schema.HTTP4xx, "account inactive"},
	1111: {schema.HTTP4xx, "account does not exist"},
	1112: {schema.HTTP4xx, "account locked"},
	1113: {schema.HTTP4xx, "account in arrears"},
	1121: {schema.HTTP4xx, "account locked for violations"},
	// Policy blocks (13xx): a rate, an overload, or a quota used up.
	1302: {schema.RateLimited, "concurrency limit"},
	1303: {schema.RateLimited, "request frequency limit"},
	1304: {schema.HTTP4xx, "daily call limit reached"},
	1305: {schema.QueueFull, "service overloaded (traffic limit)"},
	1308: {schema.HTTP4xx, "usage limit reached until its reset"},
	1309: {schema.HTTP4xx, "GLM Coding Plan expired"},
	1310: {schema.HTTP4xx, "weekly or monthly usage limit reached until its reset"},
	1311: {schema.HTTP4xx, "the plan does not include this model"},
	1312: {schema.QueueFull, "model overloaded"},
}

// zaiRefusal is the class and detail of a 429 by its Z.ai business code;
// ok is false for a body with no such code.
func zaiRefusal(status int, body []byte) (class schema.Class, detail string, ok bool) {
	if status != http.StatusTooManyRequests {
		return "", "", false
	}
	n, err := strconv.Atoi(errorCode(body))
	zc, known := zaiCodes[n]
	if err != nil || !known {
		return "", "", false
	}
	detail = fmt.Sprintf("HTTP %d, Z.ai code %d (%s)", status, n, zc.meaning)
	if zc.class == schema.HTTP4xx {
		detail += ": not a rate limit, waiting will not lift it"
	}
	return zc.class, detail, true
}

// ZAIPlanHint is what a 429 1113 (no balance) on the general base
// (/api/paas/v4, on any host) adds to its detail: Z.ai bills the general
// base and the GLM Coding Plan's apart, and a Coding Plan key has its
// quota only at /api/coding/paas/v4, so 1113 on the general base is most
// often a plan subscriber at the wrong base. "" for anything else.
func ZAIPlanHint(baseURL string, status int, body []byte) string {
	u, err := url.Parse(baseURL)
	if err != nil || status != http.StatusTooManyRequests || errorCode(body) != "1113" ||
		strings.TrimRight(u.Path, "/") != ZAIBases[0] {
		return ""
	}
	return " (a GLM Coding Plan key is billed only at " + ZAIBases[1] + ": on " + ZAIBases[0] + " it gets 1113)"
}

// zaiErrorEvent is the class and detail of an error event inside a 200
// stream by its Z.ai business code (1305 comes so); ok is false for any
// other code.
func zaiErrorEvent(code int) (class schema.Class, detail string, ok bool) {
	zc, known := zaiCodes[code]
	if !known {
		return "", "", false
	}
	return zc.class, fmt.Sprintf("error event with Z.ai code %d (%s) inside a 200 stream", code, zc.meaning), true
}

// RefusalClass is the error class of a non-200 answer, read with its body
// where the status alone is ambiguous: ClassifyStatus, but a 408 of the
// SGLang Model Gateway's admission queue is queue_full, and a Z.ai 429 is
// classed by its business code (an account or quota code http_4xx, an
// overload queue_full). A caller that retries a 429 retries only what this
// calls rate_limited or queue_full.
func RefusalClass(status int, body []byte) schema.Class {
	c, _ := classifyRefusal(status, body)
	return c
}

// ZAIBases are the API base paths Z.ai documents: the general one and the
// GLM Coding Plan's (docs.z.ai/api-reference/introduction; open.bigmodel.cn
// serves the same paths).
var ZAIBases = []string{"/api/paas/v4", "/api/coding/paas/v4"}

// ZAIBase reports whether baseURL's path is one of ZAIBases: an endpoint
// that speaks Z.ai's dialect (its thinking switch is
// "thinking": {"type": "enabled" | "disabled"}, not a chat template's
// kwargs), on Z.ai's hosts or on a proxy that keeps its paths.
func ZAIBase(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	path := strings.TrimRight(u.Path, "/")
	return slices.Contains(ZAIBases, path)
}

// ThinkingSwitch is the body field that turns a model's thinking on or
// off at baseURL: Z.ai's "thinking" {"type": "enabled" | "disabled"}
// (docs.z.ai/guides/capabilities/thinking-mode), else the chat template's
// kwarg, chat_template_kwargs {"enable_thinking": on} (vLLM, SGLang,
// llama.cpp with --jinja, for Qwen3's and GLM's templates).
func ThinkingSwitch(baseURL string, on bool) (field string, value any) {
	if ZAIBase(baseURL) {
		return "thinking", map[string]any{"type": map[bool]string{true: "enabled", false: "disabled"}[on]}
	}
	return "chat_template_kwargs", map[string]any{"enable_thinking": on}
}

// zaiHosts are Z.ai's API hosts: the international one and Zhipu's
// (docs.z.ai/api-reference/introduction, docs.bigmodel.cn).
var zaiHosts = []string{"api.z.ai", "open.bigmodel.cn"}

// checkZAIBase refuses a base URL on one of Z.ai's hosts whose path is
// none of ZAIBases (https://api.z.ai/v1, say, by the OpenAI habit): every
// request there would be a 404, so it is said at once, naming the bases.
func checkZAIBase(u *url.URL, raw string) error {
	if !slices.Contains(zaiHosts, strings.ToLower(u.Hostname())) || ZAIBase(u.String()) {
		return nil
	}
	root := RedactURL((&url.URL{Scheme: u.Scheme, Host: u.Host}).String())
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return badinput.Errorf("endpoint URL %q: Z.ai's API base is %s%s (the GLM Coding Plan's: %s%s), not %s",
		RedactURL(raw), root, ZAIBases[0], root, ZAIBases[1], path)
}
