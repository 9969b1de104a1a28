package endpoints

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
)

// Trust is how an endpoint's TLS certificate is verified: against the
// system's roots (on Linux Go reads them from SSL_CERT_FILE and
// SSL_CERT_DIR when set) plus the certificates of CACert, or not at all
// (Insecure). The zero Trust is the system's roots alone.
type Trust struct {
	// CACert is the PEM bundle's path as given (--ca-cert, or an endpoints
	// file's ca_cert resolved against the file's folder); "" for none.
	CACert string
	// Insecure skips verification (--insecure, insecure: true).
	Insecure bool
	// ClientCert and ClientKey are the PEM files of the certificate sent
	// to a server that asks for one (mTLS: --client-cert, --client-key,
	// resolved as CACert is); "" for none.
	ClientCert, ClientKey string

	// roots is the system pool plus CACert's certificates; nil: the
	// system pool, which crypto/tls loads itself.
	roots *x509.CertPool
	// prefix is the prefix of the trust flags' names that TLSFailure's
	// fixes name (Flags.Prefix).
	prefix string
	// client is ClientCert's certificate with ClientKey's key; nil: none.
	client *tls.Certificate
}

// WithClient returns t sending the client certificate of certFile with the
// key of keyFile to a server that asks for one (mTLS). where names the
// two settings in the error ("--client-cert and --client-key", say). Both
// "" is none; one without the other, a file that cannot be read, or a
// key that is not the certificate's is bad input. No error quotes the
// key file's contents.
func (t Trust) WithClient(certFile, keyFile, where string) (Trust, error) {
	switch {
	case certFile == "" && keyFile == "":
		return t, nil
	case certFile == "" || keyFile == "":
		return Trust{}, badinput.Errorf("%s: give both, the client certificate and its key", where)
	}
	var pems [2][]byte
	for i, p := range []string{certFile, keyFile} {
		b, err := readPEMFile(p)
		if err != nil {
			return Trust{}, badinput.Errorf("%s: %v", where, err)
		}
		pems[i] = b
	}
	pair, err := tls.X509KeyPair(pems[0], pems[1])
	switch {
	case err != nil && bytes.Contains(pems[1], []byte("ENCRYPTED")):
		// PKCS#8's ENCRYPTED PRIVATE KEY, or OpenSSL's Proc-Type: 4,ENCRYPTED.
		return Trust{}, badinput.Errorf("%s: the key %s is encrypted with a passphrase, which glmbench does not ask for: give it decrypted (openssl pkey -in %s -out client-key.pem)", where, keyFile, keyFile)
	case err != nil:
		return Trust{}, badinput.Errorf("%s (%s, %s): %s", where, certFile, keyFile, text.OneLine(err.Error()))
	}
	t.ClientCert, t.ClientKey, t.client = certFile, keyFile, &pair
	return t, nil
}

// SkipVerify is t verifying nothing (a coordinator's --insecure on an
// agent), its client certificate kept: whether the server's certificate
// is checked says nothing of what the server asks of glmbench.
func (t Trust) SkipVerify() Trust {
	return Trust{Insecure: true, ClientCert: t.ClientCert, ClientKey: t.ClientKey, client: t.client, prefix: t.prefix}
}

// LoadTrust reads the CA bundle at caCert (none when "") into the system
// pool, in addition to it, not instead. where names the setting in the
// error ("--ca-cert", say). A file that cannot be read, a folder, a file
// that holds no certificate (a DER one is said to be DER), or a
// CERTIFICATE block that does not parse is bad input, said before
// anything is sent; blocks of other types (a key bundled beside the
// chain) are passed over, and so is a UTF-8 byte-order mark (Windows
// Notepad's).
func LoadTrust(caCert string, insecure bool, where string) (Trust, error) {
	t := Trust{CACert: caCert, Insecure: insecure}
	if caCert == "" {
		return t, nil
	}
	if fi, err := os.Stat(caCert); err == nil && fi.IsDir() {
		// Go on Linux reads every file of SSL_CERT_DIR's folders beside
		// the system's bundle.
		return Trust{}, badinput.Errorf("%s %s: a folder, not a PEM file: give one file of CA certificates (for a folder of them, set SSL_CERT_DIR=%s)", where, caCert, caCert)
	}
	b, err := readPEMFile(caCert)
	if err != nil {
		return Trust{}, badinput.Errorf("%s: %v", where, err)
	}
	certs, err := parseCerts(b, caCert)
	if err != nil {
		return Trust{}, badinput.Errorf("%s %s: %v", where, caCert, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		// No system pool on this platform: the bundle alone is trusted.
		pool = x509.NewCertPool()
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	t.roots = pool
	return t, nil
}

// maxPEMFile is the most bytes of a CA bundle or client certificate file
// read: the whole Mozilla bundle is about 220 KiB.
const maxPEMFile = 16 << 20

// readPEMFile reads path, up to maxPEMFile: a pipe (--ca-cert <(vault
// read …)) is read as a file is, and /dev/zero or a wrong path to a model's
// weights is refused rather than read forever or whole.
func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("%s: over %d MiB, not a PEM file of certificates", path, maxPEMFile>>20)
	}
	return b, nil
}

// parseCerts returns the certificates of a PEM bundle read from path, an
// error when it holds none or one does not parse.
func parseCerts(b []byte, path string) ([]*x509.Certificate, error) {
	// pem.Decode finds a block only at the start or after a line break,
	// so a byte-order mark before the first hides it.
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	der := b
	var certs []*x509.Certificate
	var others []string
	for n := 1; ; n++ {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			others = append(others, block.Type)
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d is not a certificate: %s", n, text.OneLine(err.Error()))
		}
		certs = append(certs, c)
	}
	switch {
	case len(certs) > 0:
		return certs, nil
	case slices.Contains(others, "PKCS7"):
		// A Windows or Java export (.p7b) holds the chain inside PKCS#7.
		return nil, fmt.Errorf("holds no certificate, only %s: make PEM certificates of it with openssl pkcs7 -print_certs -in %s -out ca.pem", strings.Join(others, ", "), path)
	case len(others) > 0:
		return nil, fmt.Errorf("holds no certificate, only %s (want the CA's PEM certificate, -----BEGIN CERTIFICATE-----)", strings.Join(others, ", "))
	}
	if _, err := x509.ParseCertificates(der); err == nil && len(der) > 0 {
		return nil, fmt.Errorf("is a DER certificate, not PEM: make PEM of it with openssl x509 -inform DER -in %s -out ca.pem", path)
	}
	return nil, errors.New("holds no PEM certificate (want -----BEGIN CERTIFICATE----- blocks)")
}

// Config is a TLS client configuration that verifies as t says (crypto/tls's
// own check: the chain to a root, the host's name, the dates), offering
// HTTP/1.1; Go's transport sets the server name from the URL, a
// Transport's handshake from the address it dials.
func (t Trust) Config() *tls.Config {
	c := &tls.Config{RootCAs: t.roots, InsecureSkipVerify: t.Insecure, NextProtos: []string{"http/1.1"}}
	if client := t.client; client != nil {
		// Sent whatever CAs the server's request names, as curl's --cert
		// is: with Certificates alone, Go sends none when the server's
		// list of acceptable CAs leaves it out, and the refusal would be
		// the server's "certificate required" with no word of why.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return client, nil }
	}
	return c
}

// same reports whether t and u verify alike and send one client
// certificate: one CA file, one Insecure, one certificate and key.
func (t Trust) same(u Trust) bool {
	return t.CACert == u.CACert && t.Insecure == u.Insecure && t.ClientCert == u.ClientCert && t.ClientKey == u.ClientKey
}

// CheckTLS completes one TLS handshake with e's host as its requests
// would (its Trust, HTTP/1.1 offered) within timeout and closes it: a
// check that the certificate verifies, and that the server takes the
// client certificate sent (or none), before any load. An http endpoint,
// or one reached through a proxy, is not checked (nil). A failed check's
// error is one TLSFailure knows, or the dial's.
func (e *Endpoint) CheckTLS(ctx context.Context, timeout time.Duration) error {
	u, err := url.Parse(e.BaseURL)
	if err != nil || u.Scheme != "https" {
		return nil
	}
	t := NewTransport(TransportOptions{Conns: 1, ConnectTimeout: timeout, Trust: e.Trust})
	defer t.Close()
	if p, _ := t.Proxy(&http.Request{URL: u}); p != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	c, err := t.handshake(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	defer c.Close()
	return refusedAfter(c, u.Host, timeout)
}

// refusedAfter is the alert a TLS 1.3 server refused c's client
// certificate (or its absence) with, nil when it answered otherwise or
// not within timeout. TLS 1.3 lets the client's handshake end before the
// server has checked the client's certificate: the refusal is the answer
// to the first bytes sent, here a HEAD / that carries no credential.
func refusedAfter(c net.Conn, host string, timeout time.Duration) error {
	tc, ok := c.(*tls.Conn)
	if !ok || tc.ConnectionState().Version != tls.VersionTLS13 {
		return nil
	}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil
	}
	if _, err := fmt.Fprintf(c, "HEAD / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return nil
	}
	_, err := c.Read(make([]byte, 1))
	var remote *net.OpError
	if errors.As(err, &remote) && remote.Op == "remote error" {
		return err
	}
	return nil
}

// TLSFailure says in one line why the TLS handshake with e failed, when
// err is such a failure: its certificate refused (an unknown authority, a
// name the certificate does not hold, an expired or otherwise invalid
// certificate), with x509's own reason and the fix, or an https URL
// answered by a server that does not speak TLS. Either is a problem of the
// user's setup, as a refused key is, not of the endpoint under load. ok is
// false for any other error.
func (e *Endpoint) TLSFailure(err error) (msg string, ok bool) {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	// No system pool and no --ca-cert: a container image without
	// ca-certificates, say.
	var noRoots x509.SystemRootsError
	// Go's transport names an HTTP answer to a handshake ErrSchemeMismatch;
	// other bytes that are no TLS record stay a RecordHeaderError.
	var plain tls.RecordHeaderError
	// A TLS alert the server sent (crypto/tls's "remote error", its alert
	// of an unexported type): it refused the handshake itself.
	var remote *net.OpError
	caFlag, insecureFlag := "--"+e.Trust.prefix+"ca-cert", "--"+e.Trust.prefix+"insecure"
	skip := "or skip verification with " + insecureFlag
	ca := "give its CA with " + caFlag + " FILE (or SSL_CERT_FILE)"
	if e.Trust.CACert != "" {
		ca = "neither the system's roots nor " + e.Trust.CACert + " hold its CA: give the CA that signed it with " + caFlag + " FILE"
	}
	switch {
	case err == nil:
		// A check that passed (the agent asks of every one).
		return "", false
	case errors.As(err, &unknown):
		return fmt.Sprintf("its TLS certificate is not trusted (%s)%s: %s, %s", reason(unknown), issuer(unknown), ca, skip), true
	case errors.As(err, &host):
		return fmt.Sprintf("its TLS certificate is for another host (%s): use a host name the certificate holds, %s", hostReason(host), skip), true
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return fmt.Sprintf("its TLS certificate is out of date (%s): renew it (or check this machine's clock), %s", reason(invalid), skip), true
	case errors.As(err, &invalid):
		return fmt.Sprintf("its TLS certificate is invalid (%s): skip verification with %s", reason(invalid), insecureFlag), true
	case errors.As(err, &noRoots):
		return fmt.Sprintf("this machine has no system CA certificates (%s): install them (ca-certificates), or name a bundle with SSL_CERT_FILE or %s FILE, %s", reason(noRoots), caFlag, skip), true
	case errors.As(err, &verify):
		return fmt.Sprintf("its TLS certificate did not verify (%s): %s, %s", reason(verify.Err), ca, skip), true
	case errors.As(err, &plain):
		return fmt.Sprintf("it does not speak TLS (%s): is its URL http://, not https://?", reason(plain)), true
	case errors.Is(err, http.ErrSchemeMismatch):
		return "it does not speak TLS (it answered the handshake in plain HTTP): is its URL http://, not https://?", true
	case errors.As(err, &remote) && remote.Op == "remote error":
		return fmt.Sprintf("it refused the TLS handshake (%s): %s", reason(remote), e.Trust.alertHint(remote.Err.Error())), true
	case strings.Contains(err.Error(), "tls: server selected unsupported protocol version"):
		// crypto/tls's answer to a ServerHello of TLS 1.0 or 1.1 has no type.
		msg := err.Error()
		return fmt.Sprintf("it answered the TLS handshake with an old version (%s): %s", text.OneLine(msg[strings.Index(msg, "tls: server selected"):]), oldTLS), true
	}
	return "", false
}

// oldTLS is what a server that speaks no version glmbench offers needs.
const oldTLS = "it speaks no TLS version glmbench does (TLS 1.2 or 1.3): an old server's TLS 1.0 or 1.1 is refused, upgrade it or put a TLS-terminating proxy in front"

// alertHint says what a server that answered the handshake with alert
// (its text, "tls: certificate required") most likely wants. A server
// asking for a client certificate (mTLS) answers TLS 1.3's handshake with
// certificate_required (Go, OpenSSL) and TLS 1.2's with bad_certificate
// or, Go's, handshake_failure; one that refuses the certificate sent
// answers bad_certificate or unknown_ca.
func (t Trust) alertHint(alert string) string {
	client := "it asks for a client certificate (mTLS), and glmbench sends none: give one with --" + t.prefix + "client-cert FILE --" + t.prefix + "client-key FILE"
	if t.ClientCert != "" {
		client = "it refused the client certificate " + t.ClientCert + ": is it one the server's CA signed, for client use, and in date?"
	}
	switch strings.TrimPrefix(alert, "tls: ") {
	case "certificate required", "bad certificate", "unknown certificate authority":
		return client
	case "protocol version not supported":
		return oldTLS
	case "handshake failure":
		return "it shares no TLS version or cipher suite with glmbench, or " + client
	}
	return "see the server's log for why"
}

// issuer names the CA that signed the certificate no root vouched for
// (its subject, as openssl prints it), so the user can find the
// certificate to give: an issuing CA the server does not send beside its
// own certificate, say, though the bundle holds its root. "" when x509
// did not say which certificate it was.
func issuer(err x509.UnknownAuthorityError) string {
	if err.Cert == nil || err.Cert.Issuer.String() == "" {
		return ""
	}
	return ", issued by " + text.OneLine(err.Cert.Issuer.String())
}

// shownNames is how many of a certificate's names a refusal lists.
const shownNames = 5

// hostReason is x509's reason for a certificate of another host, its
// names cut to shownNames: a CDN's or a shared gateway's certificate holds
// hundreds, and the line would be kilobytes of them before the host that
// matters.
func hostReason(err x509.HostnameError) string {
	c := err.Certificate
	if c == nil {
		return reason(err)
	}
	names := c.DNSNames
	if net.ParseIP(err.Host) != nil {
		names = nil
		for _, ip := range c.IPAddresses {
			names = append(names, ip.String())
		}
	}
	if len(names) <= shownNames {
		return reason(err)
	}
	return fmt.Sprintf("x509: certificate is valid for %s and %d more, not %s", strings.Join(names[:shownNames], ", "), len(names)-shownNames, err.Host)
}

// reason is err's text in one line.
func reason(err error) string { return text.OneLine(err.Error()) }
