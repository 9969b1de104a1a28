package endpoints_test

import (
	"context"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// SGLang renamed /get_server_info to /server_info and keeps the old name
// as a deprecated alias; a build without the alias answers the old name
// 404, and sgl-router proxies only the old name (its /server_info is its
// fallback's 404). ServerInfo asks /server_info first and the old name only
// after a 404: one request on a current build or one without the alias,
// two on a server that knows only the old name. Each answer carries the
// --context-length the server was started with.
func TestServerInfoAsksTheNewNameAndTheOldOneOnlyAfterA404(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		kind     string
		opts     endpointstest.Options
		new, old int // requests to /server_info and /get_server_info
	}{
		{"current SGLang, both names", endpointstest.SGLang, endpointstest.Options{}, 1, 0},
		{"SGLang without the deprecated aliases", endpointstest.SGLang, endpointstest.Options{SGLangWithoutAliases: true}, 1, 0},
		{"sgl-router, the old name only", endpointstest.SGLangRouter, endpointstest.Options{}, 1, 1},
		{"the Model Gateway since the rename, both names", endpointstest.SGLangRouter, endpointstest.Options{Router: endpointstest.RouterOptions{NewInfoNames: true}}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Context, tc.opts.SGLangContextArg = 8192, true
			p := endpointstest.Start(t, tc.kind, tc.opts)
			info, err := modelClient(t, p.BaseURL(), p.Opts.Model).ServerInfo(context.Background())
			if err != nil || info["context_length"] != float64(8192) {
				t.Fatalf("server info %v (%v); want context_length 8192", info, err)
			}
			if n, o := p.Requests("GET /server_info"), p.Requests("GET /get_server_info"); n != tc.new || o != tc.old {
				t.Errorf("%d requests to /server_info and %d to /get_server_info; want %d and %d", n, o, tc.new, tc.old)
			}
		})
	}
}
