package evalcompare

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The reference is verified as the endpoint is, by its own flags with the
// reference- prefix: behind a private CA it is refused in one line whose
// fixes name --reference-ca-cert and --reference-insecure (the endpoint's
// --ca-cert would not reach it); with --reference-ca-cert, or with
// --reference-insecure (said once on stderr under that name), it opens and
// the comparison runs. Both at once, or either without a reference
// endpoint, is bad input naming them. The built-in engine is the endpoint.
func TestTheReferenceIsVerifiedByItsOwnTrustFlags(t *testing.T) {
	t.Parallel()
	_, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	ca := endpointstest.WritePEM(t, srv.Certificate())
	ref := []string{"--reference-endpoint", srv.URL + "/v1", "--limit", "1", "--tokens", "2", "--top-logprobs", "0"}
	run := func(extra ...string) (int, string) {
		code, _, stderr := execute(t, append(append([]string{"--out", t.TempDir()}, ref...), extra...)...)
		return code, stderr
	}

	code, stderr := run()
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "x509: certificate signed by unknown authority") ||
		!strings.Contains(stderr, "--reference-ca-cert FILE") || !strings.Contains(stderr, "--reference-insecure") {
		t.Errorf("an untrusted reference: exit %d, want 2 naming --reference-ca-cert and --reference-insecure:\n%s", code, stderr)
	}
	for _, flags := range [][]string{{"--reference-ca-cert", ca}, {"--reference-insecure"}} {
		code, stderr := run(flags...)
		if code == cmdutil.ExitBadInput || !strings.Contains(stderr, "against the reference") {
			t.Errorf("%v: exit %d, want the comparison run:\n%s", flags, code, stderr)
		}
		insecure := flags[0] == "--reference-insecure"
		if n := strings.Count(stderr, "NOT verified"); n != map[bool]int{true: 1, false: 0}[insecure] ||
			(insecure && !strings.Contains(stderr, "warning: --reference-insecure: ")) {
			t.Errorf("%v: the warning is said %d times:\n%s", flags, n, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(append([]string{}, ref...), "--reference-ca-cert", ca, "--reference-insecure"), "--reference-ca-cert and --reference-insecure: give one"},
		{[]string{"--reference-insecure"}, "--reference-ca-cert, --reference-insecure and --reference-client-cert are for an https --reference-endpoint"},
	} {
		code, _, stderr := execute(t, append([]string{"--out", t.TempDir()}, tc.args...)...)
		if code != cmdutil.ExitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// --reference-api-key-env is held to as --api-key-env is: the variable it
// names must be set, else the reference would be asked with no key at all.
func TestAReferenceAPIKeyEnvThatIsUnsetIsBadInput(t *testing.T) {
	t.Parallel()
	_, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	code, _, stderr := execute(t, "--out", t.TempDir(), "--reference-endpoint", srv.URL+"/v1", "--reference-insecure", "--reference-api-key-env", "GLMBENCH_TEST_NO_SUCH_KEY")
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "environment variable GLMBENCH_TEST_NO_SUCH_KEY (the API key) is empty or unset") {
		t.Errorf("exit %d, want 2 naming the unset variable:\n%s", code, stderr)
	}
}

// A reference that asks for a client certificate gets the one of
// --reference-client-cert and --reference-client-key; without them it is
// refused naming those flags, not the endpoint's.
func TestTheReferenceSendsItsOwnClientCertificate(t *testing.T) {
	t.Parallel()
	clientCA := endpointstest.NewCA(t)
	_, srv, _ := endpointstest.StartTLSConfig(t, endpointstest.VLLM, endpointstest.Options{}, endpointstest.MTLS(clientCA))
	cert, key := clientCA.ClientFiles()
	ref := []string{"--out", t.TempDir(), "--reference-endpoint", srv.URL + "/v1", "--reference-insecure", "--limit", "1", "--tokens", "2", "--top-logprobs", "0"}
	code, _, stderr := execute(t, ref...)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "--reference-client-cert FILE --reference-client-key FILE") {
		t.Errorf("no client certificate: exit %d, want 2 naming the reference's flags:\n%s", code, stderr)
	}
	code, _, stderr = execute(t, append(ref, "--reference-client-cert", cert, "--reference-client-key", key)...)
	if code == cmdutil.ExitBadInput || !strings.Contains(stderr, "against the reference") {
		t.Errorf("with the client certificate: exit %d, want the comparison run:\n%s", code, stderr)
	}
}
