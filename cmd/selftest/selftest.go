// Package selftest is `glmbench selftest`: glmbench's client measured
// against a simulated server's own record of when it sent each event.
package selftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/bench/selftest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/internal/badinput"
)

// Options are selftest's flags.
type Options struct {
	F      *cmdutil.Factory
	Out    string
	Levels string
	Tokens int
	Prompt int
	Python string
	// ClientCPUs and ServerCPUs are CPU lists ("0-1") to pin each to.
	ClientCPUs, ServerCPUs string
	// Step is the simulated server's time per batch step; 0 keeps serve's default.
	Step time.Duration
}

// NewCmdSelftest binds selftest's flags. runF replaces the run function in tests.
func NewCmdSelftest(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Measure glmbench's own client against a simulated server's truth",
		Long: `Selftest starts this binary as "serve --executor sim" in a child process (so
client and server CPU never mix), raises the open-files limit, and drives it on
loopback at 64, 128, … 4096 concurrent streams. Per level it reports events/s,
the client's CPU per 1,000 events, and the error of the client's timings
against the server's truth, compared as durations (TTFT against the server's
arrival-to-first-event; each gap between events against the server's gap), and
says at which level the client saturates. It writes selftest.json in --out.

With --python PATH (a python3 with httpx, e.g. Debian's /usr/bin/python3), a
plain Python httpx streaming client does the same work at every level, for
comparison in the same run.`,
		Args: cmdutil.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(o)
			}
			return Run(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Out, "out", "", "output folder (default: glmbench-results/<UTC time>-selftest/)")
	fl.StringVar(&o.Levels, "levels", "64,128,256,512,1024,2048,4096", "numbers of concurrent streams, in order")
	fl.IntVar(&o.Tokens, "tokens", 64, "output tokens per request")
	fl.IntVar(&o.Prompt, "prompt", 64, "prompt length per request, in bytes")
	fl.StringVar(&o.Python, "python", "", "also run a plain Python httpx client with this interpreter (e.g. /usr/bin/python3)")
	fl.DurationVar(&o.Step, "sim-step-overhead", 0, "the simulated server's time per batch step (default: serve's, 2ms); a real engine's decode step is tens of ms")
	fl.StringVar(&o.ClientCPUs, "client-cpus", "", "pin the client (and the Python client) to these CPUs, e.g. 0-1 (Linux; needs --server-cpus)")
	fl.StringVar(&o.ServerCPUs, "server-cpus", "", "pin the simulated server to these CPUs, e.g. 2-15 (Linux; needs --client-cpus)")
	return cmd
}

// Run performs the self-test and writes selftest.json.
func Run(o *Options) error {
	var levels []int
	for _, s := range strings.Split(o.Levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 65536 {
			return badinput.Errorf("--levels %q: want a comma list of stream counts from 1 to 65536", o.Levels)
		}
		levels = append(levels, n)
	}
	if o.Tokens < 2 || o.Prompt < 16 {
		return badinput.Errorf("--tokens must be at least 2 and --prompt at least 16")
	}
	if o.Step < 0 {
		return badinput.Errorf("--sim-step-overhead must not be negative")
	}
	clientCPUs, serverCPUs, err := o.cpus()
	if err != nil {
		return err
	}
	out := o.Out
	if out == "" {
		out = target.DefaultOut(o.F.Now(), "selftest")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	res, err := selftest.Run(o.F.Context, selftest.Options{
		Binary: bin, Dir: out, Levels: levels, Tokens: o.Tokens, Prompt: o.Prompt, Python: o.Python,
		ClientCPUs: clientCPUs, ServerCPUs: serverCPUs, StepOverhead: o.Step,
		Progress: func(format string, args ...any) { fmt.Fprintf(o.F.IO.ErrOut, "glmbench: "+format+"\n", args...) },
	})
	if res != nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		if werr := os.WriteFile(filepath.Join(out, "selftest.json"), append(b, '\n'), 0o644); werr != nil && err == nil {
			err = werr
		}
		switch {
		case res.SaturatesAt > 0:
			fmt.Fprintf(o.F.IO.Out, "the client saturates at %d streams\n", res.SaturatesAt)
		case len(res.Levels) > 0:
			fmt.Fprintf(o.F.IO.Out, "the client did not saturate up to %d streams\n", res.Levels[len(res.Levels)-1].Streams)
		}
		fmt.Fprintf(o.F.IO.Out, "wrote %s\n", filepath.Join(out, "selftest.json"))
	}
	if ctx := o.F.Context; err == nil && ctx != nil && errors.Is(context.Cause(ctx), cmdutil.ErrInterrupted) {
		return cmdutil.Silent(cmdutil.ExitInterrupted) // after writing what was measured
	}
	return err
}

// cpus reads --client-cpus and --server-cpus: both or neither, each a CPU
// list this process may run on.
func (o *Options) cpus() (client, server []int, err error) {
	if (o.ClientCPUs == "") != (o.ServerCPUs == "") {
		return nil, nil, badinput.Errorf("--client-cpus and --server-cpus go together: give both or neither")
	}
	if o.ClientCPUs == "" {
		return nil, nil, nil
	}
	for _, f := range []struct {
		flag, val string
		dst       *[]int
	}{{"--client-cpus", o.ClientCPUs, &client}, {"--server-cpus", o.ServerCPUs, &server}} {
		cpus, err := selftest.ParseCPUList(f.val)
		if err == nil {
			err = selftest.CheckCPUs(cpus)
		}
		if err != nil {
			return nil, nil, badinput.Errorf("%s: %v", f.flag, err)
		}
		*f.dst = cpus
	}
	return client, server, nil
}
