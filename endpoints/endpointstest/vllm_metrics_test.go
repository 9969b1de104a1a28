package endpointstest

import (
	"fmt"
	"strings"
	"testing"
)

func TestVLLMsPromptTokensCounterCountsTokensNotRequests(t *testing.T) {
	// Two requests of known prompt counts: vllm:prompt_tokens_total is
	// their sum, as vLLM's counter of prefill tokens is.
	p := Start(t, VLLM, Options{})
	for _, n := range []int{10, 30} {
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, filler(n), 2)); r.status != 200 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
	}
	sum := 0
	for _, n := range p.PromptTokens() {
		sum += n
	}
	if len(p.PromptTokens()) != 2 || sum <= 2 {
		t.Fatalf("prompt counts %v", p.PromptTokens())
	}
	r := get(t, p.URL+"/metrics")
	want := fmt.Sprintf("vllm:prompt_tokens_total{model_name=%q} %d\n", p.Opts.Model, sum)
	if !strings.Contains(string(r.body), want) {
		t.Fatalf("no %q in\n%s", want, r.body)
	}
}
