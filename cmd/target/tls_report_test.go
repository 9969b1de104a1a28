package target

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// A report records how the endpoint's certificate was verified only when
// it had one: --insecure or --ca-cert given for a plain http endpoint (a
// script that passes them everywhere) verified nothing, and a report that
// says "not verified" or "verified against ca.pem" of plain HTTP says
// something false. The same flags for https are recorded.
func TestAReportRecordsTheTrustOfAnHTTPSEndpointOnly(t *testing.T) {
	t.Parallel()
	authority := endpointstest.NewCA(t)
	ca := endpointstest.WritePEM(t, authority.Cert)
	cert, key := authority.ClientFiles()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	for _, tc := range []struct {
		url      string
		flags    endpoints.Flags
		insecure bool
		caCert   string
	}{
		{"https://10.0.0.1/v1", endpoints.Flags{CACert: ca, ClientCert: cert, ClientKey: key}, false, ca},
		{"http://10.0.0.1:8000/v1", endpoints.Flags{ClientCert: cert, ClientKey: key}, false, ""},
		{"http://10.0.0.1:8000/v1", endpoints.Flags{Insecure: true, InsecureSet: true}, false, ""},
		{"http://10.0.0.1:8000/v1", endpoints.Flags{CACert: ca}, false, ""},
		{"https://10.0.0.1/v1", endpoints.Flags{Insecure: true, InsecureSet: true}, true, ""},
		{"https://10.0.0.1/v1", endpoints.Flags{CACert: ca}, false, ca},
	} {
		tc.flags.Endpoint = tc.url
		ep, err := endpoints.Resolve(tc.flags, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		got := (&Target{Endpoint: ep}).Report(f).Endpoint
		if wantCert := map[bool]string{true: tc.flags.ClientCert}[strings.HasPrefix(tc.url, "https:")]; got.ClientCert != wantCert {
			t.Errorf("%s %+v: recorded client_cert %q, want %q", tc.url, tc.flags, got.ClientCert, wantCert)
		}
		if got.Insecure != tc.insecure || got.CACert != tc.caCert {
			t.Errorf("%s %+v: recorded insecure %v, ca_cert %q; want %v, %q", tc.url, tc.flags, got.Insecure, got.CACert, tc.insecure, tc.caCert)
		}
	}
}

// --insecure warns on stderr once per endpoint opened, and only of an
// https one: plain HTTP has no certificate to leave unverified.
func TestTheInsecureWarningIsSaidOnlyOfHTTPS(t *testing.T) {
	t.Parallel()
	plain := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	_, tlsSrv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	for _, tc := range []struct {
		base string
		want int
	}{{plain.BaseURL(), 0}, {tlsSrv.URL + "/v1", 1}} {
		f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
		flags := endpoints.Flags{Endpoint: tc.base, Insecure: true, InsecureSet: true}
		tg, err := OpenEndpoint(context.Background(), f, flags, Wait{Connect: 5 * time.Second}, "--endpoint", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.base, err)
		}
		tg.Close()
		if n := strings.Count(errOut.String(), "NOT verified"); n != tc.want {
			t.Errorf("%s: warned %d times, want %d:\n%s", tc.base, n, tc.want, errOut)
		}
	}
}
