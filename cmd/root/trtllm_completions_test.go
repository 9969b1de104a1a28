package root

import (
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// trtllm-serve's /v1/completions stream catches its generator's error and
// says it in an SSE error event ({"error": {"message": ..., "type":
// "server_error"}}) and [DONE] (serve/openai_server.py completion_generator,
// 2026), where its chat stream drops the connection, as both did in the
// 2025 builds. The truth: on either build, a completions phase whose
// prompt leaves max_seq_len no room is refused before the load in a line
// quoting the server's sentence.
func TestRunAgainstTRTLLMCompletionsRefusesAPhasePastMaxSeqLenInItsWords(t *testing.T) {
	t.Parallel()
	for _, before := range []bool{false, true} {
		p := endpointstest.Start(t, endpointstest.TRTLLM, endpointstest.Options{Context: 2048, TRTLLM: endpointstest.TRTLLMOptions{Before2026: before}})
		runRefused(t, p.BaseURL(), []string{"--api", "completions", "--phase", "full=2/2100/16"}, "phase full", "must be greater than 0", "max_seq_len (2048)")
		for i, f := range p.BodyFields() {
			if string(f["max_tokens"]) != "1" {
				t.Errorf("before 2026 %v: request %d asked max_tokens %s: the load was sent", before, i, f["max_tokens"])
			}
		}
	}
}
