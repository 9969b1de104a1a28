package target_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/conform"
	"github.com/glmbench/glmbench/cmd/eval"
	"github.com/glmbench/glmbench/cmd/evalcompare"
	"github.com/glmbench/glmbench/cmd/run"
	"github.com/glmbench/glmbench/cmd/sweep"
)

// shared is what the shared flags parsed into, read from a command's Options.
type shared struct {
	endpoint, label, out string
	keyEnvSet            bool
	connect, request     time.Duration
	stall                time.Duration
}

// command is one of the commands that take the shared flags.
type command struct {
	name string
	// args come first: eval's positional argument.
	args []string
	// new builds the command with a run function that stores what was
	// parsed into got instead of running.
	new func(f *cmdutil.Factory, got *shared) *cobra.Command
	// real builds the command as the CLI does.
	real func(f *cmdutil.Factory) *cobra.Command
	// hasStall: eval has no --stall-timeout.
	hasStall bool
	// defaults differ only where each command's NewCmd says why.
	request, stall time.Duration
}

var commands = []command{
	{name: "run", hasStall: true, request: 0, stall: time.Minute,
		real: func(f *cmdutil.Factory) *cobra.Command { return run.NewCmdRun(f, nil) },
		new: func(f *cmdutil.Factory, got *shared) *cobra.Command {
			return run.NewCmdRun(f, func(o *run.Options) error {
				*got = shared{o.Endpoint.Endpoint, o.Label, o.Out, o.Endpoint.APIKeyEnvSet, o.ConnectTimeout, o.RequestTimeout, o.StallTimeout}
				return nil
			})
		}},
	{name: "sweep", hasStall: true, request: 0, stall: time.Minute,
		real: func(f *cmdutil.Factory) *cobra.Command { return sweep.NewCmdSweep(f, nil) },
		new: func(f *cmdutil.Factory, got *shared) *cobra.Command {
			return sweep.NewCmdSweep(f, func(o *sweep.Options) error {
				*got = shared{o.Endpoint.Endpoint, o.Label, o.Out, o.Endpoint.APIKeyEnvSet, o.ConnectTimeout, o.RequestTimeout, o.StallTimeout}
				return nil
			})
		}},
	{name: "eval", args: []string{"ppl"}, request: 10 * time.Minute,
		real: func(f *cmdutil.Factory) *cobra.Command { return eval.NewCmdEval(f, nil) },
		new: func(f *cmdutil.Factory, got *shared) *cobra.Command {
			return eval.NewCmdEval(f, func(o *eval.Options) error {
				*got = shared{o.Endpoint.Endpoint, o.Label, o.Out, o.Endpoint.APIKeyEnvSet, o.ConnectTimeout, o.RequestTimeout, 0}
				return nil
			})
		}},
	{name: "conform", hasStall: true, request: time.Minute, stall: 10 * time.Second,
		real: func(f *cmdutil.Factory) *cobra.Command { return conform.NewCmdConform(f, nil) },
		new: func(f *cmdutil.Factory, got *shared) *cobra.Command {
			return conform.NewCmdConform(f, func(o *conform.Options) error {
				*got = shared{o.Endpoint.Endpoint, o.Label, o.Out, o.Endpoint.APIKeyEnvSet, o.ConnectTimeout, o.Timeout, o.StallTimeout}
				return nil
			})
		}},
}

// endpointCommands is commands and eval compare: every command that opens
// an endpoint by the shared endpoint flags (eval compare's reference has
// flags of its own).
var endpointCommands = append(append([]command(nil), commands...),
	command{name: "eval compare", real: func(f *cmdutil.Factory) *cobra.Command { return evalcompare.NewCmdCompare(f, nil) }})

// against is c's command line for the endpoint at base (model m, a fresh
// --out), then extra.
func (c command) against(t *testing.T, base string, extra ...string) []string {
	return slices.Concat(c.args, []string{"--endpoint", base, "--model", "m", "--out", t.TempDir()}, extra)
}

func byName(t *testing.T, name string) command {
	t.Helper()
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return command{}
}

// execReal runs the command as the CLI builds it and returns its error and
// what it wrote on stderr.
func execReal(t *testing.T, build func(*cmdutil.Factory) *cobra.Command, args ...string) (error, string) {
	t.Helper()
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	cmd := build(f)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	err := cmd.Execute()
	return err, errOut.String() + out.String()
}

// parse runs c with args and returns what the shared flags parsed into,
// and what it printed on stdout and stderr.
func parse(t *testing.T, c command, args ...string) (got shared, stdout, stderr string) {
	t.Helper()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	cmd := c.new(f, &got)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(append([]string{}, c.args...), args...))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %v: %v", c.name, args, err)
	}
	return got, out.String(), errOut.String()
}

func TestSharedFlagsParseTheSameInRunSweepEvalAndConform(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--endpoint", "http://h/v1", "--api-key-env", "K", "--connect-timeout", "3s",
				"--request-timeout", "4s", "--label", "L", "--out", "O"}
			want := shared{endpoint: "http://h/v1", label: "L", out: "O", keyEnvSet: true, connect: 3 * time.Second, request: 4 * time.Second}
			if c.hasStall {
				args = append(args, "--stall-timeout", "5s")
				want.stall = 5 * time.Second
			}
			if got, _, _ := parse(t, c, args...); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			def := shared{connect: 10 * time.Second, request: c.request, stall: c.stall}
			if got, _, _ := parse(t, c); got != def {
				t.Errorf("defaults: got %+v, want %+v", got, def)
			}
		})
	}
}

func TestSharedFlagsHaveOneHelpText(t *testing.T) {
	t.Parallel()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	first := commands[0].new(f, new(shared)).Flags()
	for _, c := range commands[1:] {
		fl := c.new(f, new(shared)).Flags()
		for _, name := range []string{"endpoint", "api-key-env", "connect-timeout", "label", "out"} {
			if got, want := fl.Lookup(name).Usage, first.Lookup(name).Usage; got != want {
				t.Errorf("%s --%s: %q, run's: %q", c.name, name, got, want)
			}
		}
	}
}

func TestConformsTimeoutIsADeprecatedAliasOfRequestTimeout(t *testing.T) {
	t.Parallel()
	c := byName(t, "conform")
	got, stdout, stderr := parse(t, c, "--timeout", "5s")
	if got.request != 5*time.Second {
		t.Errorf("--timeout 5s gave a request limit of %v", got.request)
	}
	if note := "glmbench: --timeout is deprecated; use --request-timeout"; !strings.Contains(stderr, note) || strings.Contains(stdout, note) {
		t.Errorf("want the deprecation note on stderr only; stdout %q, stderr %q", stdout, stderr)
	}
	if _, _, stderr := parse(t, c, "--request-timeout", "5s"); stderr != "" {
		t.Errorf("--request-timeout printed %q", stderr)
	}
	_, help, _ := parse(t, c, "--help")
	if !strings.Contains(help, "--request-timeout") || strings.Contains(help, "--timeout") {
		t.Errorf("--help lists --request-timeout and hides --timeout; it says:\n%s", help)
	}
}

func TestSharedLimitsAreCheckedAlikeBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	// Port 1 of loopback answers nothing: a command that got past its
	// flags would say the endpoint is unreachable instead.
	endpoint := []string{"--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--out", t.TempDir()}
	for _, tc := range []struct {
		command string
		args    []string
		want    string
	}{
		{"run", []string{"--connect-timeout", "-1s"}, "--connect-timeout must not be negative"},
		{"eval", []string{"--connect-timeout", "-1s"}, "timeouts must not be negative"},
		{"conform", []string{"--connect-timeout", "-1s"}, "--connect-timeout must not be negative"},
		{"run", []string{"--request-timeout", "-1s"}, "--request-timeout must not be negative"},
		{"eval", []string{"--request-timeout", "-1s"}, "timeouts must not be negative"},
		{"run", []string{"--stall-timeout", "-1s"}, "--stall-timeout must not be negative"},
		{"sweep", []string{"--connect-timeout", "-1s"}, "--connect-timeout must not be negative"},
		{"sweep", []string{"--request-timeout", "-1s"}, "--request-timeout must not be negative"},
		{"sweep", []string{"--stall-timeout", "-1s"}, "--stall-timeout must not be negative"},
		// conform's limits are never off.
		{"conform", []string{"--request-timeout", "0s"}, "--request-timeout must be positive"},
		{"conform", []string{"--timeout", "0s"}, "--timeout must be positive"},
		{"conform", []string{"--stall-timeout", "0s"}, "--stall-timeout must be positive"},
		// With several bad limits, each command names the one it always
		// named first.
		{"run", []string{"--ttft-timeout", "-1s", "--connect-timeout", "-1s"}, "--connect-timeout must not be negative"},
		{"run", []string{"--request-timeout", "-1s", "--ttft-timeout", "-1s"}, "--ttft-timeout must not be negative"},
		{"conform", []string{"--timeout", "0s", "--stall-timeout", "0s"}, "--timeout must be positive"},
		{"conform", []string{"--connect-timeout", "-1s", "--timeout", "0s"}, "--timeout must be positive"},
	} {
		c := byName(t, tc.command)
		err, _ := execReal(t, c.real, slices.Concat(c.args, endpoint, tc.args)...)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || err.Error() != tc.want {
			t.Errorf("%s %v: %v, want exit 2 saying %q", tc.command, tc.args, err, tc.want)
		}
	}
}
