package endpoints_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// infoServer answers GET routes with fixed bodies, as the named server
// documents them; any other route gets notFound.
type infoServer struct {
	routes   map[string]string
	notFound func(w http.ResponseWriter)
}

// answer is an answer of status with body of contentType ("": no header).
func answer(status int, contentType, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// Each server's answer to a route it does not serve.
var (
	// fastAPINotFound is vLLM's and SGLang's (FastAPI).
	fastAPINotFound = answer(404, "application/json", `{"detail":"Not Found"}`)
	// llamaNotFound is llama-server's (cpp-httplib).
	llamaNotFound = answer(404, "text/plain", "File Not Found")
	// ginNotFound is Ollama's (gin's default).
	ginNotFound = answer(404, "text/plain", "404 page not found")
	// axumNotFound is TGI's router's: 404, no body.
	axumNotFound = answer(404, "", "")
	// lmstudioNotFound is LM Studio's.
	lmstudioNotFound = answer(404, "application/json", `{"error":"Unexpected endpoint or method."}`)
)

func (s infoServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := s.routes[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			s.notFound(w)
			return
		}
		if len(body) > 0 && body[0] == '<' {
			w.Header().Set("Content-Type", "text/html")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestContextLengthIsReadWhereEachServerStatesIt(t *testing.T) {
	t.Parallel()
	// vLLM's ModelCard (serving_models.py): max_model_len on the base model's
	// card, null on a LoRA adapter's.
	vllmModels := `{"object":"list","data":[` +
		`{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":1735000000,"owned_by":"vllm","root":"/models/llama","parent":null,"max_model_len":32768,"permission":[{"id":"modelperm-1","object":"model_permission","created":1735000000,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}]},` +
		`{"id":"sql-lora","object":"model","created":1735000000,"owned_by":"vllm","root":"/adapters/sql","parent":"meta-llama/Llama-3.1-8B-Instruct","max_model_len":null,"permission":[]}]}`
	// llama-server's /v1/models: meta.n_ctx_train is the model's training
	// context, not the server's; /props (get_props) states the slot's.
	llamaModels := `{"object":"list","data":[{"id":"tiny-llama.gguf","object":"model","created":1735000000,"owned_by":"llamacpp","meta":{"vocab_type":2,"n_vocab":32000,"n_ctx_train":131072,"n_embd":256,"n_params":4000000,"size":16000000}}]}`
	llamaProps := `{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":4096,"speculative":false,"is_processing":false,"params":{"n_predict":-1,"seed":4294967295,"temperature":0.8,"top_k":40,"top_p":0.95}},` +
		`"total_slots":16,"model_alias":"tiny","model_path":"/models/tiny-llama.gguf","modalities":{"vision":false,"audio":false},"chat_template":"{% for m in messages %}{{ m.content }}{% endfor %}","bos_token":"<s>","eos_token":"</s>","build_info":"b6000-0000000"}`
	for _, tc := range []struct {
		name   string
		model  string
		srv    infoServer
		want   int
		source string
	}{
		{"vLLM states max_model_len on the served model's card", "meta-llama/Llama-3.1-8B-Instruct",
			infoServer{map[string]string{"/v1/models": vllmModels}, fastAPINotFound}, 32768, "max_model_len in GET /models"},
		{"a vLLM LoRA adapter's card states none, and nothing else does", "sql-lora",
			infoServer{map[string]string{"/v1/models": vllmModels}, fastAPINotFound}, 0, ""},
		{"SGLang states max_model_len on its card", "Qwen/Qwen2.5-7B-Instruct",
			infoServer{map[string]string{
				"/v1/models":       `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1735000000,"owned_by":"sglang","root":"Qwen/Qwen2.5-7B-Instruct","max_model_len":32768}]}`,
				"/get_server_info": `{"model_path":"Qwen/Qwen2.5-7B-Instruct","context_length":null,"tp_size":1,"version":"0.4.6"}`,
			}, fastAPINotFound}, 32768, "max_model_len in GET /models"},
		{"an older SGLang, without max_model_len, states context_length in /get_server_info", "Qwen/Qwen2.5-7B-Instruct",
			infoServer{map[string]string{
				"/v1/models":       `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1735000000,"owned_by":"sglang","root":"Qwen/Qwen2.5-7B-Instruct"}]}`,
				"/get_server_info": `{"model_path":"Qwen/Qwen2.5-7B-Instruct","context_length":8192,"tp_size":1,"version":"0.3.6"}`,
			}, fastAPINotFound}, 8192, "context_length in GET /get_server_info"},
		{"an SGLang without the /get_server_info alias states context_length in /server_info", "Qwen/Qwen2.5-7B-Instruct",
			infoServer{map[string]string{
				"/v1/models":   `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1735000000,"owned_by":"sglang","root":"Qwen/Qwen2.5-7B-Instruct"}]}`,
				"/server_info": `{"model_path":"Qwen/Qwen2.5-7B-Instruct","context_length":16384,"tp_size":1,"version":"0.5.6"}`,
			}, fastAPINotFound}, 16384, "context_length in GET /server_info"},
		{"SGLang without --context-length states null, which is no statement", "Qwen/Qwen2.5-7B-Instruct",
			infoServer{map[string]string{
				"/v1/models":       `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1735000000,"owned_by":"sglang","root":"Qwen/Qwen2.5-7B-Instruct"}]}`,
				"/get_server_info": `{"model_path":"Qwen/Qwen2.5-7B-Instruct","context_length":null,"version":"0.3.6"}`,
			}, fastAPINotFound}, 0, ""},
		{"llama.cpp -c 65536 -np 16 states 4,096 per slot in /props, not the training context", "tiny-llama.gguf",
			infoServer{map[string]string{"/v1/models": llamaModels, "/props": llamaProps}, llamaNotFound}, 4096, "n_ctx per slot in GET /props"},
		{"an older llama.cpp's top-level n_ctx is the whole context, not a slot's", "tiny-llama.gguf",
			infoServer{map[string]string{"/v1/models": llamaModels, "/props": `{"system_prompt":"","default_generation_settings":{"n_ctx":4096,"n_predict":-1,"model":"/models/tiny-llama.gguf"},"total_slots":16,"chat_template":"","n_ctx":65536}`}, llamaNotFound}, 4096, "n_ctx per slot in GET /props"},
		{"the OpenAI API states no context", "gpt-4o",
			infoServer{map[string]string{"/v1/models": `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"}]}`},
				func(w http.ResponseWriter) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(404)
					io.WriteString(w, `{"error":{"message":"Invalid URL (GET /props)","type":"invalid_request_error","param":null,"code":null}}`)
				}}, 0, ""},
		{"a gateway whose web UI answers every route with HTML states none", "m",
			infoServer{map[string]string{"/v1/models": `{"object":"list","data":[{"id":"m","object":"model"}]}`, "/props": "<!doctype html><html></html>", "/get_server_info": "<!doctype html><html></html>"}, llamaNotFound}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, source, err := modelClient(t, tc.srv.start(t)+"/v1", tc.model).ContextLength(context.Background())
			if err != nil || n != tc.want || source != tc.source {
				t.Fatalf("got %d from %q (err %v), want %d from %q", n, source, err, tc.want, tc.source)
			}
		})
	}
}

func TestContextLengthEndsWithItsContext(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer srv.Close()
	defer close(hang)
	c := modelClient(t, srv.URL+"/v1", "m")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, _, err := c.ContextLength(ctx); err == nil || n != 0 {
		t.Fatalf("n %d err %v", n, err)
	}
}
