// Package agent is `glmbench agent`: one load generator of a distributed
// run. It listens for a coordinator (`glmbench run --agents`), runs its
// share of each phase against the endpoint, and streams its records back.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
)

// Options are agent's parsed flags and injected state.
type Options struct {
	F      *cmdutil.Factory
	Listen string
	// APIKeyEnv is --api-key-env, when given: the key must then be set.
	// Not given, the default variable is read and may be unset.
	APIKeyEnv string
	Name      string
	// CACert is --ca-cert: a PEM bundle this agent trusts beside the
	// system's roots for an https endpoint (the coordinator's is a path on
	// its own machine, so it does not travel; its --insecure does).
	CACert string
	// ClientCert and ClientKey are --client-cert and --client-key: the
	// client certificate this agent sends an endpoint that asks for one
	// (mTLS); a key does not travel either.
	ClientCert, ClientKey string
	// HeaderEnvAllow is --header-env-allow: the variables a coordinator's
	// --header-env may have this agent read a header's value from.
	HeaderEnvAllow []string
	// TokenEnv is --token-env: the variable holding the token a
	// coordinator must give (see bench/agent's package doc).
	TokenEnv string
}

// NewCmdAgent binds agent's flags. runF replaces the run function in tests.
func NewCmdAgent(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Wait for a coordinator and send its share of the load",
		Long: `Agent is one load generator of a distributed run. It listens on --listen for
a coordinator (glmbench run --agents host:port,... or --agents-dns NAME
--agents-count N), which calibrates the endpoint once and sends every agent
the same phase plan: each builds the whole seeded schedule and sends the
requests i with i mod N equal to its index, from a start time the
coordinator broadcasts on each agent's own clock (measured by NTP-style
pings), and streams its records back. The API key is read from the agent's
own environment (--api-key-env): no secret travels over the wire. Nor does
a file: an endpoint behind a private CA is verified against the agent's own
--ca-cert, and one that asks for a client certificate (mTLS) gets the
agent's own --client-cert and --client-key (the coordinator's --insecure
does travel, and the agent says so). A coordinator's --header-env NAME=VAR
header is read here from VAR, if VAR is among --header-env-allow: a plan
names the variable, and any other would go to the plan's endpoint.

Anyone who reaches the agent's port can have it send load, with its key, to
an endpoint of their choosing, unless it is started with --token-env VAR:
then only a coordinator given the same token (run --agents-token-env) can.
The agent warns when it listens beyond loopback without one.`,
		Example: `  glmbench agent --listen :9400
  OPENAI_API_KEY=... glmbench agent --listen 0.0.0.0:9400 --api-key-env OPENAI_API_KEY
  AZURE_KEY=... glmbench agent --listen 0.0.0.0:9400 --header-env-allow AZURE_KEY
  GLMBENCH_AGENT_TOKEN=$(openssl rand -hex 16) glmbench agent --token-env GLMBENCH_AGENT_TOKEN`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.Dispatch(cmd, o, runF, Run)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Listen, "listen", ":9400", "address to listen on for the coordinator")
	fl.StringVar(&o.APIKeyEnv, "api-key-env", "", "environment variable holding the endpoint's API key, read here, never sent (default "+endpoints.DefaultAPIKeyEnv+", which may then be unset)")
	fl.StringVar(&o.CACert, "ca-cert", "", "PEM file of CA certificates to trust beside the system's, for an https endpoint behind a private CA")
	fl.StringVar(&o.ClientCert, "client-cert", "", "PEM file of the client certificate for an endpoint that asks for one (mTLS), with --client-key")
	fl.StringVar(&o.ClientKey, "client-key", "", "PEM file of --client-cert's private key")
	fl.StringSliceVar(&o.HeaderEnvAllow, "header-env-allow", nil, "environment variables a coordinator's --header-env NAME=VAR may read here for a header's value (comma-separated, repeatable); a plan naming another is refused")
	fl.StringVar(&o.TokenEnv, "token-env", "", "environment variable holding the token a coordinator must give (run --agents-token-env); without it, anyone who reaches --listen can use this agent")
	fl.StringVar(&o.Name, "name", "", "the agent's name in the report (default: agent-$JOB_COMPLETION_INDEX on Kubernetes, else the host name)")
	return cmd
}

// name is the agent's name: --name, the Indexed Job's completion index,
// or the host name.
func (o *Options) name() string {
	if o.Name != "" {
		return o.Name
	}
	if i := o.F.Getenv("JOB_COMPLETION_INDEX"); i != "" {
		return "agent-" + i
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "agent"
}

// checkTokenIsNoKey refuses a token that holds the agent's API key (from
// --api-key-env, else the default variable): every coordinator sends the
// token, in plain HTTP, on every request, and the key never travels
// otherwise. A key of fewer than 8 characters (a placeholder such as
// "none") counts only as the whole token.
func (o *Options) checkTokenIsNoKey(token string) error {
	keyEnv := cmp.Or(o.APIKeyEnv, endpoints.DefaultAPIKeyEnv)
	key := strings.TrimSpace(o.F.Getenv(keyEnv))
	if key == "" || key != token && (len(key) < 8 || !strings.Contains(token, key)) {
		return nil
	}
	return badinput.Errorf("--token-env %s holds the API key (%s): every coordinator would send it over the wire to this agent, and the key never travels otherwise: give the agent a token of its own (openssl rand -hex 16)", endpoints.ShownVar(o.TokenEnv), endpoints.ShownVar(keyEnv))
}

// loopback says whether a listener's address is reachable from this host
// only.
func loopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// Run serves the agent protocol until ctx ends (Ctrl-C, SIGTERM).
func Run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	trust, err := endpoints.LoadTrust(o.CACert, false, "--ca-cert")
	if err != nil {
		return err
	}
	if trust, err = trust.WithClient(o.ClientCert, o.ClientKey, "--client-cert and --client-key"); err != nil {
		return err
	}
	for _, v := range o.HeaderEnvAllow {
		if !endpoints.IsEnvName(v) {
			// Quoted as endpoints quotes a name: a secret pasted for one is clipped.
			return badinput.Errorf("--header-env-allow %s: want environment variables' names, comma-separated", endpoints.ShownVar(v))
		}
	}
	var token string
	if o.TokenEnv != "" {
		if token, err = agent.ReadToken("--token-env", o.TokenEnv, o.F.Getenv); err != nil {
			return err
		}
		if err := o.checkTokenIsNoKey(token); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return badinput.Errorf("--listen %s: %v", o.Listen, err)
	}
	srv := agent.NewServer(agent.ServerOptions{Name: o.name(), APIKeyEnv: o.APIKeyEnv, Getenv: o.F.Getenv, Trust: trust, ErrOut: o.F.IO.ErrOut, HeaderEnvAllow: o.HeaderEnvAllow, Token: token})
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(o.F.IO.ErrOut, "glmbench: agent %s listening on %s\n", o.name(), ln.Addr())
	if token == "" && !loopback(ln.Addr()) {
		fmt.Fprintf(o.F.IO.ErrOut, "glmbench: warning: no --token-env: anyone who reaches %s can have this agent send load, with its API key, to any endpoint\n", ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// A running phase ends as interrupted, its records streamed back,
		// before the server shuts down (else Shutdown waits it out and the
		// coordinator loses every request in flight).
		srv.Cancel()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
