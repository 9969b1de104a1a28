package endpoints_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

func TestContextLengthReadsTGIsInfo(t *testing.T) {
	t.Parallel()
	models := `{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":0,"owned_by":"meta-llama/Llama-3.1-8B-Instruct"}]}`
	for _, tc := range []struct {
		name   string
		info   string
		want   int
		source string
	}{
		{"3.x with the defaults: max_input_tokens is max_total_tokens-1, so it bounds nothing more",
			`{"model_id":"meta-llama/Llama-3.1-8B-Instruct","model_sha":null,"model_pipeline_tag":"text-generation","max_concurrent_requests":128,"max_best_of":2,"max_stop_sequences":4,"max_input_tokens":8191,"max_total_tokens":8192,"validation_workers":2,"max_client_batch_size":4,"router":"text-generation-router","version":"3.3.4","sha":null,"docker_label":null}`,
			8192, "max_total_tokens in GET /info"},
		{"--max-input-tokens 1024 --max-total-tokens 2048: both are named",
			`{"model_id":"m","max_input_tokens":1024,"max_total_tokens":2048,"router":"text-generation-router","version":"2.4.1"}`,
			2048, "max_total_tokens in GET /info, which bounds the prompt alone at max_input_tokens 1024"},
		{"1.x names the prompt's bound max_input_length",
			`{"model_id":"m","max_input_length":1024,"max_total_tokens":2048,"max_batch_total_tokens":16000,"version":"1.4.5"}`,
			2048, "max_total_tokens in GET /info, which bounds the prompt alone at max_input_tokens 1024"},
		{"an /info without max_total_tokens states nothing", `{"model_id":"m","version":"x"}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := infoServer{map[string]string{"/v1/models": models, "/info": tc.info}, axumNotFound}
			c := modelClient(t, srv.start(t)+"/v1", "meta-llama/Llama-3.1-8B-Instruct")
			n, source, err := c.ContextLength(context.Background())
			if err != nil || n != tc.want || source != tc.source {
				t.Fatalf("got %d from %q (err %v), want %d from %q", n, source, err, tc.want, tc.source)
			}
			// The prompt's own bound is stated where the source names it.
			in, inSource := c.PromptLimit(context.Background())
			if named := strings.Contains(tc.source, "max_input_tokens 1024"); named != (in == 1024 && inSource == "max_input_tokens in GET /info") || !named && in != 0 {
				t.Errorf("PromptLimit %d from %q; want 1024 from max_input_tokens exactly when the source names it", in, inSource)
			}
		})
	}
}

func TestContextLengthOfTheTGIPersonalityIsItsMaxTotalTokens(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{Context: 3000, APIKey: "k-secret-0123456789"})
	c := clientOf(t, endpointOf(t, endpoints.Flags{Endpoint: p.BaseURL(), Model: p.Opts.Model}, map[string]string{"OPENAI_API_KEY": "k-secret-0123456789"}))
	if n, source, err := c.ContextLength(context.Background()); n != 3000 || source != "max_total_tokens in GET /info" || err != nil {
		t.Fatalf("got %d from %q (err %v), want 3000 from max_total_tokens", n, source, err)
	}
}
