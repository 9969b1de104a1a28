package root

import (
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

func TestExploreTGI(t *testing.T) {
	p := endpointstest.Start(t, endpointstest.TGI, endpointstest.Options{Context: 2048, TGI: endpointstest.TGIOptions{MaxInput: 1024}})
	for _, args := range [][]string{
		{"run", "--endpoint", p.BaseURL(), "--phase", "long=2/2040/16"},
		{"run", "--endpoint", p.BaseURL(), "--phase", "in=2/1500/16"},
		{"conform", "--endpoint", p.BaseURL()},
		{"eval", "all", "--endpoint", p.BaseURL(), "--limit", "2"},
	} {
		dir := t.TempDir()
		code, stdout, stderr := executeBounded(t, append(args, "--out", dir)...)
		t.Logf("%v: exit %d\nSTDOUT:\n%s\nSTDERR:\n%s", args, code, stdout, stderr)
	}
}
