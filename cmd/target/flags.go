package target

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/internal/badinput"
)

// defaultConnectTimeout is --connect-timeout's default in every command.
const defaultConnectTimeout = 10 * time.Second

// Common are the Options fields of the flags every endpoint command has,
// embedded in run's, sweep's, eval's and conform's Options: the endpoint
// flags, --connect-timeout, --label, --out and --device.
type Common struct {
	Endpoint       endpoints.Flags
	ConnectTimeout time.Duration
	// WaitReady is --wait-ready, how long to wait for an endpoint still
	// starting before it counts as unreachable (0: not at all).
	WaitReady time.Duration
	Label     string
	Out       string
	// Device is --device, what the built-in engine's model runs on
	// (engine.Options.Device); it does not apply with an endpoint.
	Device string

	// fs is the command's flag set, once Flags.AddFlags has bound it (nil
	// for Options built without a command): what Changed is asked of.
	fs *pflag.FlagSet
}

// Flags is the one set of flags that run, sweep, eval and conform share: the
// endpoint flags, --connect-timeout, --request-timeout, --stall-timeout,
// --label, --out and --device, with their help, their validation and the prologue
// that opens the endpoint and names the report.
//
// Each command builds them over its own Options: Common is the embedded
// Common, each Limit points to the command's own field, which so keeps its
// name (conform's request limit is Options.Timeout, as conform.Config's).
// A Limit whose To is nil is a flag the command does not have. Flags holds
// no state of its own, so a command may build them whenever it needs them.
type Flags struct {
	Common *Common
	// RequestTimeout is --request-timeout, the limit on a whole request.
	RequestTimeout Limit
	// StallTimeout is --stall-timeout, the limit on silence after a
	// stream's first content event.
	StallTimeout Limit
	// Section says the command writes one section of a report (eval,
	// conform): Open refuses a --out that holds another label's report.
	Section bool
	// Alias is an old spelling of --request-timeout (conform's --timeout),
	// kept as a hidden, deprecated flag that sets the same value.
	Alias string
	// Builtin, when set, adjusts the built-in engine's options when no
	// endpoint is named (eval compare's --weight-dtype).
	Builtin func(*engine.Options)
}

// LoadFlags are the shared flags of a command that streams load (run,
// sweep) over c and its request and stall limits: no request limit by
// default, since the TTFT and stall limits end a hung stream and a long
// decode may take any time, and a stall limit of 60 s.
func LoadFlags(c *Common, request, stall *time.Duration) *Flags {
	return &Flags{
		Common:         c,
		RequestTimeout: Limit{To: request},
		StallTimeout:   Limit{To: stall, Default: 60 * time.Second},
	}
}

// Limit is how a command takes one of the shared per-request limits.
type Limit struct {
	// To is the command's field the flag sets; nil: no such flag.
	To *time.Duration
	// Default is the flag's default.
	Default time.Duration
	// Positive refuses 0; otherwise 0 means no limit.
	Positive bool
}

// help is the flag's help text: what it limits, and what 0 means.
func (l Limit) help(what string) string {
	if l.Positive {
		return what + " (must be positive)"
	}
	return what + " (0: none)"
}

// AddFlags binds the shared flags to cmd. A deprecated alias's note is
// written to the command's stderr (cobra would print it on its stdout,
// where run's Markdown and the report tables go).
func (s *Flags) AddFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.SetOutput(stderrOf{cmd})
	c := s.Common
	c.fs = fl
	addEndpointFlags(cmd, &c.Endpoint)
	fl.DurationVar(&c.ConnectTimeout, "connect-timeout", defaultConnectTimeout, "limit on a dial plus TLS handshake")
	fl.DurationVar(&c.WaitReady, "wait-ready", 0, "wait up to this long for an endpoint that is still starting (no connection; 502/503/504, or Cloudflare's 521/522/523/530, on /models; 503 on /health), asking every 2s, as vllm bench serve's --ready-check-timeout-sec (0: no wait)")
	if r := s.RequestTimeout; r.To != nil {
		fl.DurationVar(r.To, "request-timeout", r.Default, r.help("limit on a whole request"))
		if s.Alias != "" {
			fl.DurationVar(r.To, s.Alias, r.Default, r.help("limit on a whole request"))
			// Hidden, and noted by Parsed in glmbench's own voice (pflag's
			// deprecation note would be the one line without "glmbench: ").
			_ = fl.MarkHidden(s.Alias)
		}
	}
	if st := s.StallTimeout; st.To != nil {
		fl.DurationVar(st.To, "stall-timeout", st.Default, st.help("limit on silence after a stream's first content event"))
	}
	fl.StringVar(&c.Label, "label", "", "name of this run in reports (default: the model name, or builtin)")
	fl.StringVar(&c.Out, "out", "", "output folder (default: glmbench-results/<UTC time>-<label>/)")
	fl.StringVar(&c.Device, "device", engine.DeviceCPU, "the built-in engine (no --endpoint): "+engine.DeviceHelp)
}

// Parsed records what only the parse tells: whether --api-key-env was
// given (endpoints.Resolve then holds an endpoints file to it) and whether
// --insecure was (even as false: it then overrides the file's trust). The command
// calls it first thing when it runs.
func (s *Flags) Parsed() {
	s.Common.Endpoint.APIKeyEnvSet = s.changed("api-key-env")
	s.Common.Endpoint.InsecureSet = s.changed("insecure")
	if s.Alias != "" && s.changed(s.Alias) {
		fmt.Fprintf(s.Common.fs.Output(), "glmbench: --%s is deprecated; use --request-timeout\n", s.Alias)
	}
}

func (s *Flags) changed(name string) bool { fs := s.Common.fs; return fs != nil && fs.Changed(name) }

// Validate checks the named shared limits (flag names without "--"),
// before anything is sent, in the order given: none is negative, and a
// Positive one is not 0. Each command keeps the order it always checked
// in, so a command line with several bad limits names the same one as
// before. Each error names the flag as it was spelled (the alias, when
// only it was given).
func (s *Flags) Validate(order ...string) error {
	for _, name := range order {
		if err := s.check(name); err != nil {
			return err
		}
	}
	return nil
}

// check validates one shared limit by its flag name.
func (s *Flags) check(name string) error {
	var l Limit
	switch name {
	case "connect-timeout":
		l = Limit{To: &s.Common.ConnectTimeout}
	case "stall-timeout":
		l = s.StallTimeout
	case "request-timeout":
		l = s.RequestTimeout
		if s.Alias != "" && s.changed(s.Alias) && !s.changed("request-timeout") {
			name = s.Alias
		}
	default:
		panic("target: no shared limit named " + name) // a caller's typo, not input
	}
	switch {
	case l.To == nil:
	case l.Positive && *l.To <= 0:
		return badinput.Errorf("--%s must be positive", name)
	case *l.To < 0:
		return badinput.Errorf("--%s must not be negative", name)
	}
	return nil
}

// Open is the prologue the commands share, after Validate: it checks
// --device (a bad name, or a device given with an endpoint, is bad input
// before anything starts), opens the endpoint (within --connect-timeout)
// or starts the built-in engine on the device, takes the start time from f.Now,
// and names the report's label and folder from --label and --out (output,
// or sectionOutput for a Section command, whose error closes the target).
// The caller closes the target.
func (s *Flags) Open(ctx context.Context, f *cmdutil.Factory) (*Target, error) {
	c := s.Common
	device, err := engine.ParseDevice(c.Device)
	if err != nil {
		return nil, badinput.Errorf("--device: %v", err)
	}
	if c.Endpoint.Given() && (device != engine.DeviceCPU || s.changed("device")) {
		return nil, badinput.Errorf("--device picks what the built-in engine runs on: it does not apply with --endpoint")
	}
	builtin := func(o *engine.Options) {
		if s.Builtin != nil {
			s.Builtin(o)
		}
		o.Device = device
	}
	if c.WaitReady < 0 {
		return nil, badinput.Errorf("--wait-ready must not be negative")
	}
	t, err := OpenEndpoint(ctx, f, c.Endpoint, Wait{Connect: c.ConnectTimeout, Ready: c.WaitReady}, "--endpoint", builtin)
	if err != nil {
		return nil, err
	}
	t.Started = f.Now()
	if !s.Section {
		t.Label, t.Out = t.output(c.Label, c.Out)
	} else if t.Label, t.Out, err = t.sectionOutput(c.Label, c.Out); err != nil {
		t.Close()
		return nil, err
	}
	if err := checkWritable(t.Out); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// stderrOf writes to the command's stderr as it is when written to, so
// that SetErr after AddFlags (the root command's, a test's) holds.
type stderrOf struct{ cmd *cobra.Command }

func (w stderrOf) Write(p []byte) (int, error) { return w.cmd.ErrOrStderr().Write(p) }
