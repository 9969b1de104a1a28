// Package target opens the endpoint a command talks to: the one the
// endpoint flags name, checked before any load is sent, or the built-in
// engine started in-process when none is named.
package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// Target is an opened endpoint.
type Target struct {
	Endpoint *endpoints.Endpoint
	// Started, Label and Out are set by Flags.Open: when the command
	// started, and its report's label and folder.
	Started    time.Time
	Label, Out string

	connect time.Duration
	builtin *Builtin
	// samples are the endpoint's scraped metrics so far, written to
	// metrics.jsonl beside the report.
	samples []schema.MetricsSample
}

// AddSamples keeps scraped metrics for the report's metrics.jsonl.
func (t *Target) AddSamples(s []schema.MetricsSample) { t.samples = append(t.samples, s...) }

// WriteServerPlots draws the scraped metrics' queue depth, running
// requests and KV usage over each phase into the report's folder; a failure
// is only a warning on errOut, as the plots are not the report.
func (t *Target) WriteServerPlots(errOut io.Writer) {
	if len(t.samples) == 0 {
		return
	}
	if _, err := reports.WriteServerPlots(t.Out, t.samples); err != nil {
		fmt.Fprintf(errOut, "glmbench: warning: server plots: %v\n", err)
	}
}

// Wait is how long OpenEndpoint waits on an endpoint: Connect for a dial
// plus TLS handshake, Ready for one still starting (--wait-ready; 0: it is
// unreachable at once).
type Wait struct {
	Connect, Ready time.Duration
}

// OpenEndpoint resolves endpoint flags and checks the endpoint answers
// (taking its first model when no model is given; waiting up to wait.Ready
// for one still starting), or, with no endpoint
// named, starts a built-in engine, its options adjusted by tweak when set;
// flag names the flag that would have named one, for the line it prints.
// Its errors are bad input (exit 2), said before any load is sent, or
// ctx's cause when it ends during the wait. The caller closes the target.
func OpenEndpoint(ctx context.Context, f *cmdutil.Factory, flags endpoints.Flags, wait Wait, flag string, tweak func(*engine.Options)) (*Target, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	t := &Target{connect: wait.Connect}
	if !flags.Given() && (flags.CACert != "" || flags.Insecure || flags.ClientCert != "" || flags.ClientKey != "") {
		// The built-in engine serves plain HTTP on loopback: nothing to verify.
		return nil, badinput.Errorf("--%sca-cert, --%sinsecure and --%sclient-cert are for an https %s: the built-in engine serves plain HTTP", flags.Prefix, flags.Prefix, flags.Prefix, flag)
	}
	if !flags.Given() && (len(flags.Headers) > 0 || len(flags.HeaderEnv) > 0 || flags.APIKeyEnvSet) {
		// The built-in engine asks for no key and reads no header: a flag
		// meant for an endpoint whose --endpoint went missing would
		// otherwise be dropped without a word.
		return nil, badinput.Errorf("--%sheader, --%sheader-env and --%sapi-key-env are for an %s: the built-in engine takes no key or header", flags.Prefix, flags.Prefix, flags.Prefix, flag)
	}
	if !flags.Given() {
		o := engine.DefaultOptions()
		o.Version = f.Version
		if tweak != nil {
			tweak(&o)
		}
		b, err := StartBuiltin(o)
		if err != nil {
			return nil, err
		}
		t.builtin, t.Endpoint = b, b.Endpoint
		dev := b.Engine.Device()
		if dev.Fallback != "" {
			fmt.Fprintf(f.IO.ErrOut, "glmbench: --device auto: no GPU opened (%s); the built-in engine runs on the CPU\n", dev.Fallback)
		}
		fmt.Fprintf(f.IO.ErrOut, "glmbench: no %s: using the built-in engine (%s on %s) at %s\n", flag, b.Endpoint.Model, dev, b.Endpoint.BaseURL)
		return t, nil
	}
	ep, err := endpoints.Resolve(flags, f.Getenv)
	if err != nil {
		return nil, err
	}
	if ep.Trust.Insecure && strings.HasPrefix(ep.BaseURL, "https:") {
		why := "--" + flags.Prefix + "insecure"
		if !flags.Insecure {
			why = "insecure: true in " + flags.File
		}
		fmt.Fprintf(f.IO.ErrOut, "glmbench: warning: %s: %s's TLS certificate is NOT verified; whoever is on the path can read and change every request, its API key included\n", why, endpoints.RedactURL(ep.BaseURL))
	}
	if err := awaitReady(ctx, ep, wait.Connect, wait.Ready, f.IO.ErrOut); err != nil {
		return nil, redactErr(ep, err)
	}
	t.Endpoint = ep
	return t, nil
}

// Close stops the built-in engine, if open started one.
func (t *Target) Close() {
	if t.builtin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.builtin.Stop(ctx)
	}
}

// addEndpointFlags binds the endpoint flags every endpoint command shares.
func addEndpointFlags(cmd *cobra.Command, f *endpoints.Flags) {
	fl := cmd.Flags()
	fl.StringVar(&f.Endpoint, "endpoint", "", "API base URL, e.g. http://127.0.0.1:30000/v1 (none: the built-in engine)")
	fl.StringVar(&f.Model, "model", "", "model id (default: the first that /v1/models lists)")
	fl.StringVar(&f.APIKeyEnv, "api-key-env", endpoints.DefaultAPIKeyEnv, "environment variable holding the API key")
	fl.StringArrayVar(&f.Headers, "header", nil, "extra request header K=V (repeatable; values never appear in output)")
	fl.StringArrayVar(&f.HeaderEnv, "header-env", nil, "extra request header K=VAR whose value is read from the environment variable VAR, so it is in no command line (repeatable; agents read VAR from their own environment, if started with --header-env-allow VAR)")
	fl.StringVar(&f.File, "endpoints", "", "YAML file of endpoints: endpoints: [{name, base_url, model, api_key_env, headers, header_env, ca_cert, insecure, client_cert, client_key}]")
	fl.StringVar(&f.Name, "name", "", "which endpoint of --endpoints to use")
	fl.StringVar(&f.CACert, "ca-cert", "", "PEM file of CA certificates to trust beside the system's (an endpoint behind a private CA)")
	fl.BoolVar(&f.Insecure, "insecure", false, "do not verify the endpoint's TLS certificate (a self-signed lab server)")
	fl.StringVar(&f.ClientCert, "client-cert", "", "PEM file of the client certificate for an endpoint that asks for one (mTLS), with --client-key")
	fl.StringVar(&f.ClientKey, "client-key", "", "PEM file of --client-cert's private key")
}

// resolveModel checks the endpoint answers and, without --model, takes the
// first model it lists, then asks its readiness route (look, not waiting).
// It speaks before any load, so problems are bad input.
func resolveModel(ctx context.Context, ep *endpoints.Endpoint, connect time.Duration, warn io.Writer) error {
	return look(ctx, ep, connect, warn, false)
}

// listModels is resolveModel's first step: GET /models, the base made /v1
// where the address was a server's. With waiting, an answer of a server
// still starting is a *notReady; without, it is said as it always was, with
// a hint at --wait-ready.
func listModels(ctx context.Context, ep *endpoints.Endpoint, connect time.Duration, warn io.Writer, waiting bool) error {
	ctx, cancel := context.WithTimeout(ctx, connect+20*time.Second)
	defer cancel()
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: connect, Trust: ep.Trust})
	defer tr.Close()
	if v1, ok := versionedBase(ctx, ep, tr); ok {
		fmt.Fprintf(warn, "glmbench: note: %s is a server's address and %s/models answers: using %s as the API base\n", endpoints.RedactURL(ep.BaseURL), endpoints.RedactURL(v1), endpoints.RedactURL(v1))
		ep.BaseURL = v1
	}
	ids, err := endpoints.NewClient(ep, tr).ListModels(ctx)
	status := endpoints.HTTPStatus(err)
	var redirect *endpoints.RedirectError
	switch {
	case errors.As(err, &redirect):
		// Never followed: it would carry the key and headers to the Location.
		where := "without a Location"
		if redirect.Origin != "" {
			where = "to " + redirect.Origin
		}
		return badinput.Errorf("GET %s/models answered a redirect (HTTP %d) %s; glmbench never follows redirects: give the endpoint's own URL", ep.BaseURL, redirect.Status, where)
	case err == nil && ep.Model == "" && len(ids) == 0:
		return badinput.Errorf("%s/models lists no model; pass --model", ep.BaseURL)
	case err == nil:
		if ep.Model == "" {
			ep.Model = ids[0]
		}
		return nil
	case status == 401 || status == 403:
		key := "no API key was sent; set $" + ep.APIKeyEnv + " or --api-key-env"
		if ep.HasKey() {
			key = "check the key in $" + ep.APIKeyEnv
		}
		if names := ep.HeaderNames(); len(names) > 0 {
			// Azure's api-key, a gateway's X-Api-Key: the credential may
			// be a header's.
			key += ", and the headers sent (" + strings.Join(names, ", ") + ")"
		}
		return badinput.Errorf("the endpoint refused the credentials (HTTP %d): %s", status, key)
	case starting(status) && waiting:
		return &notReady{why: fmt.Sprintf("GET /models answered HTTP %d", status)}
	case status != 0 && ep.Model != "":
		// Some providers have no /models; with --model given that is fine.
		fmt.Fprintf(warn, "glmbench: warning: GET /models answered HTTP %d%s; using --model %s%s%s\n", status, modelsHint(ep.BaseURL), ep.Model, startingHint(status), said(err))
		return nil
	case status != 0:
		return badinput.Errorf("GET %s/models answered HTTP %d%s; pass --model%s%s", ep.BaseURL, status, modelsHint(ep.BaseURL), startingHint(status), said(err))
	}
	if msg, ok := ep.TLSFailure(err); ok {
		return badinput.Errorf("the endpoint %s: %s", ep, msg)
	}
	if cause := ended(ctx); cause != nil {
		return cause // Ctrl-C: not the endpoint's answer
	}
	msg := text.OneLine(err.Error())
	if _, answered := endpoints.Answered(err); !answered {
		switch {
		case plainToTLS(ep, err):
			return badinput.Errorf("the endpoint %s is unreachable: %s (a TLS server's bytes: is it https://?)", ep, msg)
		case waiting:
			return &notReady{why: msg}
		case noSuchHost(err):
			// A typo, most likely: no hint at waiting (--wait-ready does
			// wait on it: a docker compose service's name resolves only
			// once its container runs).
			return badinput.Errorf("the endpoint %s is unreachable: %s", ep, msg)
		}
		return badinput.Errorf("the endpoint %s is unreachable: %s%s", ep, msg, startingHint(0))
	}
	return badinput.Errorf("the endpoint %s is unreachable: %s", ep, msg)
}

// said is "; the endpoint says: " and the server's own message in err, ""
// for none: Google's APIs answer a key they do not know with 400 "API key
// not valid. …", not 401, and the message says what to fix.
func said(err error) string {
	if msg := endpoints.AnswerMessage(err); msg != "" {
		return "; the endpoint says: " + msg
	}
	return ""
}

// modelsHint names the base to give when base itself ends in /models (a
// models URL pasted for the API base), for a failed GET base/models; ""
// otherwise. Such a base is not refused outright: Azure AI's inference base
// ends in /models.
func modelsHint(base string) string {
	if trimmed, ok := strings.CutSuffix(base, "/models"); ok && strings.Contains(trimmed, "://") {
		return fmt.Sprintf(" (the URL given ends in /models: is the API base %s?)", endpoints.RedactURL(trimmed))
	}
	return ""
}

// versionedBase is base + "/v1" when the base URL has no path at all and
// GET /v1/models is there (it answers, or asks for credentials while the
// root's /models does not answer): a server's
// address given for its API base. vLLM and SGLang serve the OpenAI API
// under /v1 only (their /models is 404), and llama.cpp's root /completions
// is its own native route, not the OpenAI one at /v1/completions, so /v1
// is the base every such server means.
func versionedBase(ctx context.Context, ep *endpoints.Endpoint, tr http.RoundTripper) (string, bool) {
	u, err := url.Parse(ep.BaseURL)
	if err != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", false
	}
	v1 := strings.TrimRight(ep.BaseURL, "/") + "/v1"
	_, err = endpoints.NewClient(ep.At(v1), tr).ListModels(ctx)
	switch endpoints.HTTPStatus(err) {
	case http.StatusUnauthorized, http.StatusForbidden:
		// Asked for credentials, unless the root's /models answers: a
		// proxy in front of an API at the root refuses paths it does not
		// serve with 403 too.
		_, rootErr := endpoints.NewClient(ep, tr).ListModels(ctx)
		return v1, rootErr != nil
	}
	return v1, err == nil
}

// ServerInfo fetches SGLang's /get_server_info beside the API base, when the
// endpoint has one; anything else is left out.
func (t *Target) ServerInfo(ctx context.Context) map[string]any {
	ep, connect := t.Endpoint, t.connect
	ctx, cancel := context.WithTimeout(ctx, connect+5*time.Second)
	defer cancel()
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: connect, Trust: ep.Trust})
	defer tr.Close()
	info, _ := endpoints.NewClient(ep, tr).ServerInfo(ctx)
	return info
}

// redactErr removes the endpoint's secrets from an error's text, keeping its exit code.
func redactErr(ep *endpoints.Endpoint, err error) error {
	msg := ep.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	redacted := errors.New(msg)
	if badinput.Is(err) {
		return badinput.Wrap(redacted)
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitCode(err), Err: redacted}
}

// output gives a command's report label and folder: the ones given, or by
// default the model's name ("builtin" for the built-in engine, so that run,
// eval and conform on it share one report) and
// glmbench-results/<UTC time>-<label>/ of the target's start.
func (t *Target) output(label, out string) (string, string) {
	if label == "" {
		label = t.Endpoint.Model
		if t.Endpoint.Builtin {
			label = "builtin"
		}
	}
	if out == "" {
		out = DefaultOut(t.Started, label)
	}
	return label, out
}

// DefaultOut is the folder a command writes to without --out:
// glmbench-results/<UTC time>-<label>/.
func DefaultOut(started time.Time, label string) string {
	return filepath.Join("glmbench-results", started.UTC().Format("20060102T150405Z")+"-"+PathSafe(label))
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// PathSafe makes a label fit for a file name.
func PathSafe(s string) string {
	s = strings.Trim(unsafePath.ReplaceAllString(s, "-"), "-.")
	if s == "" {
		return "run"
	}
	return s
}

// Report is a new, empty report of this target, under its label and start
// time: run fills its phases, sweep its sweeps, eval and conform their
// sections.
func (t *Target) Report(f *cmdutil.Factory) *schema.Report {
	ep := t.Endpoint
	// Plain HTTP verified nothing, whatever --insecure or --ca-cert said.
	var trust endpoints.Trust
	if strings.HasPrefix(ep.BaseURL, "https:") {
		trust = ep.Trust
	}
	return &schema.Report{
		Schema: schema.ReportSchema, Tool: schema.Tool{Name: "glmbench", Version: f.Version},
		Label: t.Label, StartedAt: t.Started.UTC(), FinishedAt: f.Now().UTC(),
		Endpoint: schema.Endpoint{BaseURL: endpoints.RedactURL(ep.BaseURL), Model: ep.Model, Builtin: ep.Builtin, Headers: ep.HeaderNames(), Insecure: trust.Insecure, CACert: trust.CACert, ClientCert: trust.ClientCert},
		Phases:   []schema.PhaseResult{},
	}
}

// WriteReport writes rep and records to the target's folder, stamped with
// the time it finished. run and sweep call it after every phase or point,
// so that a killed command keeps what it measured.
func (t *Target) WriteReport(f *cmdutil.Factory, rep *schema.Report, records []schema.Record) error {
	rep.FinishedAt = f.Now().UTC()
	if err := reports.WriteDir(t.Out, rep, records); err != nil {
		return fmt.Errorf("writing the report to %s: %w", t.Out, err)
	}
	if len(t.samples) > 0 {
		if err := reports.WriteMetricsFile(t.Out, t.samples); err != nil {
			return fmt.Errorf("writing the server metrics to %s: %w", t.Out, err)
		}
	}
	return nil
}
