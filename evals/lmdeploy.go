package evals

import (
	"regexp"

	"github.com/glmbench/glmbench/endpoints"
)

// lmdeployLogprobsRefusal matches LMDeploy's refusal of a chat request
// asking logprobs when it was started without --logprobs-mode:
// "Logprobs(True)/top_logprobs(20) requested " (serving_chat_completion.py
// check_request; the count is None where top_logprobs is absent).
var lmdeployLogprobsRefusal = regexp.MustCompile(`^Logprobs\((?:True|False)\)/top_logprobs\((?:\d+|None)\) requested\b`)

// lmdeployLogprobsHint says, after a failure's status line, how to start
// LMDeploy so it gives chat logprobs, when msg, the error message of a 4xx
// about the request, is its refusal of them; "" for any other answer.
func lmdeployLogprobsHint(status int, msg string) string {
	if !endpoints.RefusesRequest(status) || !lmdeployLogprobsRefusal.MatchString(msg) {
		return ""
	}
	return " (LMDeploy gives chat logprobs only when started with --logprobs-mode raw_logprobs)"
}
