package evals

import (
	"encoding/json"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// LMDeploy's chat logprobs put the sampled token in the entry's own token
// and logprob and only the other candidates in top_logprobs
// (api_server.py _create_chat_completion_logprobs); OpenAI's list holds
// the sampled token too. Top has it either way, at its own logprob.
func TestTopHoldsTheSampledTokenWhereTheServersListLeavesItOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, entry string }{
		{"LMDeploy", `{"token":"B","logprob":-0.1,"top_logprobs":[{"token":"A","logprob":-2.5},{"token":"C","logprob":-3}]}`},
		{"OpenAI", `{"token":"B","logprob":-0.1,"top_logprobs":[{"token":"B","logprob":-0.1},{"token":"A","logprob":-2.5},{"token":"C","logprob":-3}]}`},
	} {
		var e ChatTokenLogprob
		if err := json.Unmarshal([]byte(tc.entry), &e); err != nil {
			t.Fatal(err)
		}
		top := e.Top()
		if len(top) != 3 || top["B"] != -0.1 || top["A"] != -2.5 || top["C"] != -3 {
			t.Errorf("%s: %v; want B -0.1, A -2.5, C -3", tc.name, top)
		}
	}
}

// A question LMDeploy gives up on (a prompt past --session-len with
// max_tokens: a 200 of finish_reason "error", the engine's error text as
// content) is a bad_response failure naming it, not an answer scored
// wrong.
func TestAnAnswerTheServerGaveUpOnIsABadResponseNotAWrongAnswer(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 8})
	res := runEval("triviaqa", Config{Endpoint: &endpoints.Endpoint{BaseURL: p.BaseURL(), Model: p.Opts.Model}, Concurrency: 2, Limit: 2}, SampleTriviaQA())
	if res.Failure == nil || res.Failure.Kind != string(BadResponse) || res.Failure.Detail != `the server gave up on the answer (finish_reason "error"): internal error happened, status code ResponseType.INPUT_LENGTH_ERROR` {
		t.Fatalf("%+v %+v; want a bad_response saying the server gave up", res, res.Failure)
	}
}
