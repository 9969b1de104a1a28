package target_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/conform"
	"github.com/glmbench/glmbench/cmd/eval"
	"github.com/glmbench/glmbench/cmd/run"
	"github.com/glmbench/glmbench/cmd/sweep"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/cudaexec"
)

// deviceOf builds each command with a run function that keeps the
// --device it parsed.
var deviceOf = map[string]func(f *cmdutil.Factory, got *string) *cobra.Command{
	"run": func(f *cmdutil.Factory, got *string) *cobra.Command {
		return run.NewCmdRun(f, func(o *run.Options) error { *got = o.Device; return nil })
	},
	"sweep": func(f *cmdutil.Factory, got *string) *cobra.Command {
		return sweep.NewCmdSweep(f, func(o *sweep.Options) error { *got = o.Device; return nil })
	},
	"eval": func(f *cmdutil.Factory, got *string) *cobra.Command {
		return eval.NewCmdEval(f, func(o *eval.Options) error { *got = o.Device; return nil })
	},
	"conform": func(f *cmdutil.Factory, got *string) *cobra.Command {
		return conform.NewCmdConform(f, func(o *conform.Options) error { *got = o.Device; return nil })
	},
}

func TestTheDeviceFlagParsesTheSameInRunSweepEvalAndConform(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		for _, tc := range []struct {
			args []string
			want string
		}{{nil, "cpu"}, {[]string{"--device", "cpu-ops"}, "cpu-ops"}, {[]string{"--device=auto"}, "auto"}} {
			f, _, _ := cmdutil.TestFactory(context.Background(), nil)
			var got string
			cmd := deviceOf[c.name](f, &got)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs(append(append([]string{}, c.args...), tc.args...))
			if err := cmd.Execute(); err != nil || got != tc.want {
				t.Errorf("%s %v: --device %q (%v), want %q", c.name, tc.args, got, err, tc.want)
			}
			if u := cmd.Flags().Lookup("device").Usage; u != "the built-in engine (no --endpoint): "+engine.DeviceHelp {
				t.Errorf("%s --device's help: %q", c.name, u)
			}
		}
	}
}

func TestABadDeviceIsRefusedAlikeBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	// Port 1 of loopback answers nothing: a command that got past --device
	// would say the endpoint is unreachable instead.
	endpoint := []string{"--endpoint", "http://127.0.0.1:1/v1", "--model", "m"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "gpu"}, `--device: device "gpu": want one of cpu, cuda, auto, cpu-ops`},
		{[]string{"--device", "cuda"}, "--device picks what the built-in engine runs on: it does not apply with --endpoint"},
		{[]string{"--device", "cpu"}, "--device picks what the built-in engine runs on: it does not apply with --endpoint"},
	} {
		for _, c := range commands {
			err, _ := execReal(t, c.real, slices.Concat(c.args, endpoint, []string{"--out", t.TempDir()}, tc.args)...)
			if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || err == nil || err.Error() != tc.want {
				t.Errorf("%s %v: %v, want exit 2 saying %q", c.name, tc.args, err, tc.want)
			}
		}
	}
}

// open runs the shared prologue with no endpoint on device, as a command
// does, and returns the target (closed when the test ends) and stderr.
func open(t *testing.T, device string) (*target.Target, string, error) {
	t.Helper()
	f, _, stderr := cmdutil.TestFactory(context.Background(), nil)
	fl := &target.Flags{Common: &target.Common{Device: device, Out: t.TempDir()}}
	tg, err := fl.Open(context.Background(), f)
	if tg != nil {
		t.Cleanup(tg.Close)
	}
	return tg, stderr.String(), err
}

func TestTheBuiltinEngineOnCUDAWithoutAGPUFailsInOneLine(t *testing.T) {
	t.Parallel()
	cmdtest.NoGPU(t)
	_, _, err := open(t, "cuda")
	if !errors.Is(err, cudaexec.ErrNoDevice) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "starting the built-in engine: device cuda: ") {
		t.Errorf("%v: want one line wrapping cudaexec.ErrNoDevice", err)
	}
}

func TestTheBuiltinEngineOnAutoWithoutAGPUServesOnTheCPUAndSaysWhy(t *testing.T) {
	t.Parallel()
	cmdtest.NoGPU(t)
	tg, stderr, err := open(t, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Endpoint.Builtin || strings.Count(stderr, "glmbench: --device auto: no GPU opened (") != 1 ||
		!strings.Contains(stderr, "using the built-in engine (glmbench-nano on cpu (cpu-") {
		t.Errorf("builtin %v; stderr %q", tg.Endpoint.Builtin, stderr)
	}
}
