package run

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/bench/agent"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
)

// defaultAgentPort is --agents-port's default, the port `glmbench agent`
// listens on by default.
const defaultAgentPort = 9400

// AgentFlags are --agents, --agents-dns, --agents-count and --agents-port:
// the agents a distributed run coordinates.
type AgentFlags struct {
	Addrs []string
	DNS   string
	Count int
	Port  int // 0: defaultAgentPort
	// Wait bounds how long --agents-dns waits for Count agents to be ready.
	Wait time.Duration
	// TokenEnv is --agents-token-env: the variable holding the token the
	// agents were started with (their --token-env).
	TokenEnv string

	token string // TokenEnv's value, read by validate
	conns []*agent.Conn
}

// AddFlags binds the agent flags on fl.
func (a *AgentFlags) AddFlags(fl *pflag.FlagSet) {
	fl.StringSliceVar(&a.Addrs, "agents", nil, "coordinate these glmbench agents (host:port, comma list): each sends the requests i with i mod N equal to its index")
	fl.StringVar(&a.DNS, "agents-dns", "", "coordinate the agents behind this DNS name (a Kubernetes headless Service), --agents-count of them")
	fl.IntVar(&a.Count, "agents-count", 0, "how many agents --agents-dns must find")
	fl.IntVar(&a.Port, "agents-port", defaultAgentPort, "the agents' port under --agents-dns")
	fl.StringVar(&a.TokenEnv, "agents-token-env", "", "environment variable holding the token the agents were started with (glmbench agent --token-env)")
	fl.DurationVar(&a.Wait, "agents-wait", 2*time.Minute, "how long --agents-dns waits for --agents-count agents to be ready")
}

// given says whether the run is distributed.
func (a *AgentFlags) given() bool { return len(a.Addrs) > 0 || a.DNS != "" }

// validate checks the agent flags, and reads --agents-token-env's token
// through getenv, before anything is sent.
func (a *AgentFlags) validate(getenv func(string) string) error {
	switch {
	case len(a.Addrs) > 0 && a.DNS != "":
		return badinput.Errorf("--agents and --agents-dns: give one")
	case a.DNS != "" && a.Count < 1:
		return badinput.Errorf("--agents-dns needs --agents-count, the number of agents to wait for")
	case a.DNS == "" && a.Count != 0:
		return badinput.Errorf("--agents-count goes with --agents-dns")
	case a.Port < 0 || a.Port > 65535:
		return badinput.Errorf("--agents-port must be a port, 1 to 65535")
	case a.TokenEnv != "" && !a.given():
		return badinput.Errorf("--agents-token-env goes with --agents or --agents-dns")
	case a.TokenEnv != "":
		var err error
		a.token, err = agent.ReadToken("--agents-token-env", a.TokenEnv, getenv)
		return err
	}
	return nil
}

// dial finds the agents (resolving --agents-dns until Count answer, in a
// fixed order so indexes are the same on every try) and checks that each
// answers a ping, before any load: an unreachable agent is bad input, as
// is a token that holds one of the endpoint's secrets.
func (a *AgentFlags) dial(ctx context.Context, bo *bench.Options, say func(string)) error {
	if err := agent.CheckOptions(bo); err != nil {
		return err
	}
	if a.token != "" && bo.Endpoint.Redact(a.token) != a.token {
		// The token travels, in plain HTTP, to every agent; the key must
		// not (each agent reads its own).
		return badinput.Errorf("--agents-token-env %s holds the endpoint's API key or one of its header values, which would go over the wire to every agent: give the agents a token of their own (openssl rand -hex 16)", endpoints.ShownVar(a.TokenEnv))
	}
	addrs := a.Addrs
	if a.DNS != "" {
		var err error
		if addrs, err = a.resolve(ctx); err != nil {
			return err
		}
	}
	conns, err := agent.Dial(ctx, addrs, a.token)
	if err != nil {
		return err
	}
	a.conns = conns
	say(fmt.Sprintf("glmbench: coordinating %d agents: %s", len(conns), strings.Join(addrs, ", ")))
	return nil
}

// resolve looks --agents-dns up until it names Count addresses (a headless
// Service lists only its ready pods), sorted.
func (a *AgentFlags) resolve(ctx context.Context) ([]string, error) {
	deadline := time.Now().Add(a.Wait)
	var last []string
	for {
		ips, err := net.DefaultResolver.LookupHost(ctx, a.DNS)
		if err == nil {
			last = oneFamily(ips)
			if len(last) >= a.Count {
				out := make([]string, a.Count)
				for i, ip := range last[:a.Count] {
					out[i] = net.JoinHostPort(ip, strconv.Itoa(cmp.Or(a.Port, defaultAgentPort)))
				}
				return out, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, badinput.Errorf("--agents-dns %s: %d of %d agents found within %s (%v)", a.DNS, len(last), a.Count, a.Wait, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// phase runs one calibrated phase across the agents.
func (a *AgentFlags) phase(ctx context.Context, bo *bench.Options, pl bench.Plan) bench.PhaseRun {
	return agent.RunPhase(ctx, bo, pl, a.conns)
}

// oneFamily keeps ips' IPv4 addresses (its IPv6 ones when it has none),
// sorted: a dual-stack headless Service lists each pod under both, and one
// agent counted twice would be given two shards.
func oneFamily(ips []string) []string {
	var v4, v6 []string
	for _, ip := range ips {
		if p := net.ParseIP(ip); p != nil && p.To4() == nil {
			v6 = append(v6, ip)
		} else {
			v4 = append(v4, ip)
		}
	}
	if len(v4) == 0 {
		v4 = v6
	}
	slices.Sort(v4)
	return v4
}
