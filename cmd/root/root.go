// Package root builds glmbench's command tree and runs it as a process:
// signals, exit codes and the one-line error message.
package root

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	agentcmd "github.com/glmbench/glmbench/cmd/agent"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/conform"
	"github.com/glmbench/glmbench/cmd/eval"
	"github.com/glmbench/glmbench/cmd/evalcompare"
	"github.com/glmbench/glmbench/cmd/gate"
	"github.com/glmbench/glmbench/cmd/model"
	"github.com/glmbench/glmbench/cmd/report"
	"github.com/glmbench/glmbench/cmd/run"
	"github.com/glmbench/glmbench/cmd/selftest"
	"github.com/glmbench/glmbench/cmd/serve"
	"github.com/glmbench/glmbench/cmd/sweep"
	"github.com/glmbench/glmbench/cmd/version"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
)

// Version is set at build time with -ldflags "-X github.com/glmbench/glmbench/cmd/root.Version=…";
// otherwise it comes from the module's build info.
var Version = ""

func toolVersion() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

// NewCmdRoot returns the glmbench command with all its subcommands.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "glmbench <command>",
		Short: "Benchmark OpenAI-compatible LLM serving endpoints",
		Long: `glmbench measures OpenAI-compatible serving endpoints (SGLang, vLLM, hosted
providers): how fast they serve under four fixed load phases, with every
failure kept apart by kind, and writes report.json, report.md and
requests.jsonl for side-by-side comparison.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badinput.Errorf("%s: %v (see %s --help)", c.CommandPath(), err, c.CommandPath())
	})
	cmd.AddCommand(run.NewCmdRun(f, nil))
	cmd.AddCommand(sweep.NewCmdSweep(f, nil))
	cmd.AddCommand(conform.NewCmdConform(f, nil))
	ev := eval.NewCmdEval(f, nil)
	ev.AddCommand(evalcompare.NewCmdCompare(f, nil))
	cmd.AddCommand(ev)
	cmd.AddCommand(model.NewCmdModel(f))
	cmd.AddCommand(serve.NewCmdServe(f, nil))
	cmd.AddCommand(agentcmd.NewCmdAgent(f, nil))
	cmd.AddCommand(selftest.NewCmdSelftest(f, nil))
	cmd.AddCommand(report.NewCmdReport(f, nil))
	cmd.AddCommand(gate.NewCmdGate(f, nil))
	cmd.AddCommand(version.NewCmdVersion(f))
	return cmd
}

// Execute runs the command tree with args and returns the exit code,
// printing a failure as one line on f's error stream.
func Execute(f *cmdutil.Factory, args []string) int {
	cmd := NewCmdRoot(f)
	cmd.SetArgs(args)
	// Whatever cobra refuses before any command runs is the command line's
	// fault: an unknown command, or the arguments of cobra's own commands
	// (completion, help). Ours say so themselves (cmdutil.NoArgs).
	ran := false
	cmd.PersistentPreRun = func(*cobra.Command, []string) { ran = true }
	err := cmd.ExecuteContext(f.Context)
	if err == nil {
		return cmdutil.ExitOK
	}
	if !ran {
		err = badinput.Wrap(err)
	}
	code := cmdutil.ExitCode(err)
	if msg := cmdutil.Message(err); msg != "" {
		fmt.Fprintf(f.IO.ErrOut, "glmbench: %s\n", text.OneLine(msg))
	}
	return code
}

// Main runs glmbench as a process. The first SIGINT or SIGTERM cancels the
// run, which writes what it has and exits 130; a second one exits at once.
// GLMBENCH_CPUPROFILE=FILE writes a CPU profile of the whole process (client
// and built-in engine) for `go tool pprof`.
func Main() int {
	if path := os.Getenv("GLMBENCH_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() {
					pprof.StopCPUProfile()
					f.Close()
				}()
			}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "\nglmbench: interrupted; stopping, and writing what was measured (press Ctrl-C again to quit at once)")
		cancel(cmdutil.ErrInterrupted)
		<-sig
		os.Exit(cmdutil.ExitInterrupted)
	}()
	return Execute(cmdutil.System(ctx, toolVersion()), os.Args[1:])
}
