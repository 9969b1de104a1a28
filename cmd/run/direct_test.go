package run

import (
	"context"
	"github.com/glmbench/glmbench/cmd/target"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// Run is exported for programs that build Options themselves, without the
// cobra command: the shared flags are wired up then too, so a bad endpoint
// is the error it always was, not a nil pointer.
func TestRunWithOptionsBuiltByHandReportsTheEndpoint(t *testing.T) {
	t.Parallel()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	o := &Options{F: f, Phases: "single", StallTimeout: time.Minute, TTFTTimeout: time.Minute, PhaseCap: time.Minute, Summary: "full", Body: target.Body{IgnoreEOS: true}}
	o.Endpoint.Endpoint = "http://127.0.0.1:1/v1"
	o.Endpoint.Model = "m"
	o.ConnectTimeout = time.Second
	err := Run(context.Background(), o)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("%v (exit %d), want the endpoint unreachable, exit 2", err, cmdutil.ExitCode(err))
	}
}
