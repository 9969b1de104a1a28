package server

import (
	"fmt"
	"testing"
)

// The engine answers SGLang's current names, /server_info and /model_info,
// and their deprecated aliases /get_server_info and /get_model_info, with
// the same answer: each carries the model path it was started with.
func TestTheInfoRoutesAnswerUnderBothSGLangNames(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{ModelPath: "preset:nano"}})
	for _, pair := range [][2]string{{"/server_info", "/get_server_info"}, {"/model_info", "/get_model_info"}} {
		var infos [2]map[string]any
		for i, path := range pair {
			code, b := e.get(path)
			if code != 200 {
				t.Fatalf("%s: %d %s", path, code, b)
			}
			infos[i] = decode[map[string]any](t, b)
		}
		for _, k := range []string{"model_path", "context_length", "version", "tokenizer_path", "served_model_name"} {
			if a, b := fmt.Sprint(infos[0][k]), fmt.Sprint(infos[1][k]); a != b {
				t.Errorf("%s %s = %s, %s %s = %s", pair[0], k, a, pair[1], k, b)
			}
		}
		if infos[0]["model_path"] != "preset:nano" {
			t.Errorf("%s model_path %v, want preset:nano", pair[0], infos[0]["model_path"])
		}
	}
}
