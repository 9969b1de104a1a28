package endpoints_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

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
	}, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":"Unexpected endpoint or method."}`)
	}}
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.start(t) + "/v1", Model: "gemma-3-270m-it-qat"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	c := endpoints.NewClient(ep, tr)
	n, source, err := c.ContextLength(context.Background())
	if err != nil || n != 4096 || source != "context_length of the loaded instance in GET /api/v1/models" {
		t.Fatalf("ContextLength %d from %q (err %v); want 4096 from the loaded instance", n, source, err)
	}
	if n, source := c.PromptLimit(context.Background()); n != 0 {
		t.Errorf("PromptLimit %d from %q; want none", n, source)
	}
}
