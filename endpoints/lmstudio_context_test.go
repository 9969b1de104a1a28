package endpoints_test

import (
	"context"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// LM Studio states the context a model was loaded with only in its own
// REST API, GET /api/v1/models (0.4.0+): loaded_instances[].config
// .context_length. max_context_length there (and in /api/v0/models) is the
// model's own maximum, which a request past the loaded context does not get.
func TestContextLengthReadsLMStudiosLoadedInstance(t *testing.T) {
	t.Parallel()
	models := `{"object":"list","data":[{"id":"gemma-3-270m-it-qat","object":"model","owned_by":"organization_owner"}]}`
	v0 := `{"object":"list","data":[{"id":"gemma-3-270m-it-qat","object":"model","type":"llm","state":"loaded","max_context_length":32768}]}`
	const source = "context_length of the loaded instance in GET /api/v1/models"
	for _, tc := range []struct {
		name, model, v1 string
		want            int
	}{
		{"the loaded instance's context, not max_context_length", "gemma-3-270m-it-qat",
			`{"models":[{"type":"llm","key":"gemma-3-270m-it-qat","loaded_instances":[{"id":"gemma-3-270m-it-qat","config":{"context_length":4096}}],"max_context_length":32768,"format":"gguf"}]}`, 4096},
		{"an instance loaded under an identifier of its own", "my-gemma",
			`{"models":[{"type":"llm","key":"gemma-3-270m-it-qat","loaded_instances":[{"id":"my-gemma","config":{"context_length":8192}}],"max_context_length":32768}]}`, 8192},
		{"another model's instance is not this one's", "gemma-3-270m-it-qat",
			`{"models":[{"type":"llm","key":"qwen2.5-7b-instruct","loaded_instances":[{"id":"qwen2.5-7b-instruct","config":{"context_length":4096}}],"max_context_length":32768},{"type":"llm","key":"gemma-3-270m-it-qat","loaded_instances":[],"max_context_length":32768}]}`, 0},
		{"a model not loaded yet (JIT) states nothing", "gemma-3-270m-it-qat",
			`{"models":[{"type":"llm","key":"gemma-3-270m-it-qat","loaded_instances":[],"max_context_length":32768}]}`, 0},
		{"a build before 0.4.0 has only /api/v0/models, whose max_context_length is not the loaded context", "gemma-3-270m-it-qat", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			routes := map[string]string{"/v1/models": models, "/api/v0/models": v0}
			if tc.v1 != "" {
				routes["/api/v1/models"] = tc.v1
			}
			srv := infoServer{routes, lmstudioNotFound}
			n, got, err := modelClient(t, srv.start(t)+"/v1", tc.model).ContextLength(context.Background())
			want := source
			if tc.want == 0 {
				want = ""
			}
			if err != nil || n != tc.want || got != want {
				t.Fatalf("got %d from %q (err %v), want %d from %q", n, got, err, tc.want, want)
			}
		})
	}
}

func TestContextLengthOfTheLMStudioPersonalityIsItsLoadedContext(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LMStudio, endpointstest.Options{Context: 2048, LMStudio: endpointstest.LMStudioOptions{JIT: true}})
	if n, source, err := modelClient(t, p.BaseURL(), p.Opts.Model).ContextLength(context.Background()); err != nil || n != 2048 || source != "context_length of the loaded instance in GET /api/v1/models" {
		t.Fatalf("got %d from %q (err %v), want the loaded 2048", n, source, err)
	}
}

// LM Studio answers a route it does not serve with a 200, not a 404
// ("Unexpected endpoint or method. ... Returning 200 anyway",
// lmstudio-bug-tracker#618, #2085), so /get_server_info, /props and /info
// answer 200 before /api/v1/models is asked: none of them is a context,
// and the loaded instance's still is; nor is any a prompt limit.
func TestLMStudiosContextIsReadThoughEveryOtherRouteAnswers200(t *testing.T) {
	t.Parallel()
	srv := infoServer{map[string]string{
		"/v1/models":     `{"object":"list","data":[{"id":"gemma-3-270m-it-qat","object":"model","owned_by":"organization_owner"}]}`,
		"/api/v1/models": `{"models":[{"type":"llm","key":"gemma-3-270m-it-qat","loaded_instances":[{"id":"gemma-3-270m-it-qat","config":{"context_length":4096}}],"max_context_length":32768}]}`,
	}, answer(200, "application/json", `{"error":"Unexpected endpoint or method."}`)}
	c := modelClient(t, srv.start(t)+"/v1", "gemma-3-270m-it-qat")
	n, source, err := c.ContextLength(context.Background())
	if err != nil || n != 4096 || source != "context_length of the loaded instance in GET /api/v1/models" {
		t.Fatalf("ContextLength %d from %q (err %v); want 4096 from the loaded instance", n, source, err)
	}
	if n, source := c.PromptLimit(context.Background()); n != 0 {
		t.Errorf("PromptLimit %d from %q; want none", n, source)
	}
}
