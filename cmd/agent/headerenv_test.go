package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/badinput"
)

// --header-env-allow lists the variables a plan's headers may be read
// from. The truth: comma-separated and repeated forms add up, in order;
// a value that is no variable's name is bad input before the agent
// listens.
func TestHeaderEnvAllowNamesVariables(t *testing.T) {
	t.Parallel()
	o := cmdtest.MustParse(t, NewCmdAgent, "--header-env-allow", "AZURE_KEY,CF_ID", "--header-env-allow", "CF_SECRET")
	if got := o.HeaderEnvAllow; !slices.Equal(got, []string{"AZURE_KEY", "CF_ID", "CF_SECRET"}) {
		t.Fatalf("%v, want [AZURE_KEY CF_ID CF_SECRET]", got)
	}
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	// A key pasted for a name: refused, quoted only by its first four
	// characters, as endpoints quotes a name that is no variable's.
	err := Run(context.Background(), &Options{F: f, Listen: "127.0.0.1:0", HeaderEnvAllow: []string{"sk-live-0123456789"}})
	if !badinput.Is(err) || strings.Contains(err.Error(), "0123456789") || !strings.Contains(err.Error(), `"sk-l…"`) {
		t.Fatalf("a value that is no variable's name: %v, want bad input quoting only its start", err)
	}
}
