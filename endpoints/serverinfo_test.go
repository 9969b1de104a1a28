package endpoints

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// SGLang's /get_server_info is its ServerArgs: api_key and admin_api_key in
// clear (testdata/sglang_server_info.json is a real server's dump, the one in
// shared/reference). A key
// glmbench never sent cannot be found by value, so credential fields go by
// name, and every other field of the real dump stays.
func TestServerInfoDropsCredentialFieldsAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/sglang_server_info.json")
	if err != nil {
		t.Fatal(err)
	}
	var dump map[string]any
	if err := json.Unmarshal(raw, &dump); err != nil {
		t.Fatal(err)
	}
	dump["api_key"] = "sk-user-key-0123456789"
	dump["admin_api_key"] = "admin-only-9876543210"
	dump["ssl_keyfile_password"] = "pem-pass-phrase"
	dump["hf_token"] = "hf_abcdefghijklmnop"
	body, _ := json.Marshal(dump)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	ep, err := Resolve(Flags{Endpoint: srv.URL + "/v1", Model: "m"}, func(string) string { return "sk-user-key-0123456789" })
	if err != nil {
		t.Fatal(err)
	}
	info, err := NewClient(ep, NewTransport(TransportOptions{})).ServerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(info)
	for _, secret := range []string{"sk-user-key", "admin-only", "pem-pass", "hf_abcdef"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("server_info keeps %q", secret)
		}
	}
	for _, name := range []string{"api_key", "admin_api_key", "ssl_keyfile_password", "hf_token"} {
		if _, ok := info[name]; ok {
			t.Errorf("server_info keeps the field %s", name)
		}
	}
	dropped := 0
	for k := range dump {
		if _, ok := info[k]; !ok {
			dropped++
			if !secretField(k) {
				t.Errorf("server_info lost %s, which holds no credential", k)
			}
		}
	}
	for _, keep := range []string{"max_total_tokens", "speculative_token_map", "bucket_time_to_first_token", "ssl_keyfile", "context_length", "tokenizer_path"} {
		if _, inDump := dump[keep]; inDump {
			if _, ok := info[keep]; !ok {
				t.Errorf("server_info lost %s", keep)
			}
		}
	}
	t.Logf("%d of %d fields dropped as credentials", dropped, len(dump))
}
