package client

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/reqid"
)

// HTTP transports (Config.HTTPTransport, --http-transport).
const (
	// TransportAuto is the lean transport for http:// targets and
	// net/http's transport, with HTTP/2 offered over TLS, for https://
	// targets and whenever a proxy applies.
	TransportAuto = "auto"
	// TransportLean is the lean HTTP/1.1 transport (transport.go): plain
	// HTTP only.
	TransportLean = "lean"
	// TransportNetHTTP is net/http's transport: HTTP/1.1 on http://; on
	// https:// HTTP/2 when the server picks it in the TLS handshake (ALPN),
	// else HTTP/1.1.
	TransportNetHTTP = "net/http"
	// TransportH2 is net/http's transport speaking HTTP/2 only: negotiated
	// in the TLS handshake on https:// (a server that does not pick h2 fails
	// the handshake), with prior knowledge (h2c) on http://.
	TransportH2 = "h2"
	// TransportHTTP1 is net/http's transport speaking HTTP/1.1 only.
	TransportHTTP1 = "http1"

	transportStd = "std" // the earlier name of net/http, still accepted
)

// CheckTransport reports whether name is a known transport (or empty, which
// means TransportAuto) that can reach baseURL.
func CheckTransport(name, baseURL string) error {
	switch name {
	case "", TransportAuto, TransportNetHTTP, transportStd, TransportH2, TransportHTTP1:
		return nil
	case TransportLean:
		if strings.HasPrefix(strings.ToLower(baseURL), "https://") {
			return errors.New("the lean transport speaks plain HTTP only; an https:// target needs auto, net/http, h2 or http1")
		}
		return nil
	}
	return fmt.Errorf("unknown transport %q (want auto, lean, net/http, h2 or http1)", name)
}

// newTransport returns the transport cfg selects for requests to base,
// keeping up to idle connections open between requests.
func newTransport(cfg *Config, base string, idle int) (http.RoundTripper, error) {
	name := cmp.Or(cfg.HTTPTransport, TransportAuto)
	if err := CheckTransport(name, base); err != nil {
		return nil, err
	}
	secure := strings.HasPrefix(strings.ToLower(base), "https://")
	if (name == TransportAuto || name == TransportLean) && !secure && !proxied(base) {
		return newLeanTransport(idle), nil
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	var p http.Protocols
	switch name {
	case TransportHTTP1:
		p.SetHTTP1(true)
	case TransportH2:
		if secure {
			p.SetHTTP2(true)
			tc.VerifyConnection = requireH2
		} else {
			p.SetUnencryptedHTTP2(true)
		}
	default: // auto and net/http; lean behind a proxy
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 30 * time.Second,
		TLSClientConfig:     tc,
		Protocols:           &p,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     32 << 10,
		ReadBufferSize:      32 << 10,
	}, nil
}

// requireH2 fails a TLS handshake in which the server did not pick HTTP/2.
func requireH2(cs tls.ConnectionState) error {
	if cs.NegotiatedProtocol != "h2" {
		return errors.New("the server did not negotiate HTTP/2 (ALPN h2) in the TLS handshake: use --http-transport auto or http1")
	}
	return nil
}

// tlsConfig is the TLS configuration of cfg: certificates verified against
// the system's roots or cfg.CACert's, unless cfg.Insecure; the server name
// of cfg.Host when it is set; session tickets kept, so a new connection to
// the same server resumes the TLS session instead of a full handshake.
func tlsConfig(cfg *Config) (*tls.Config, error) {
	tc := &tls.Config{
		InsecureSkipVerify: cfg.Insecure, //nolint:gosec // --insecure, warned about
		ClientSessionCache: tls.NewLRUClientSessionCache(0),
	}
	if cfg.CACert != "" {
		pool, err := LoadCACert(cfg.CACert)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if cfg.Host != "" {
		tc.ServerName = hostOnly(cfg.Host)
	}
	return tc, nil
}

// LoadCACert reads a PEM file of certificate authorities (--ca-cert).
func LoadCACert(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in the file (want one or more -----BEGIN CERTIFICATE----- blocks)", path)
	}
	return pool, nil
}

// CheckHost reports whether h can be sent as a Host header (--host-header):
// a host name or address, with an optional port.
func CheckHost(h string) error {
	if h == "" {
		return nil
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c == 0x7f || strings.IndexByte(`/\@?#,;"`, c) >= 0 {
			return fmt.Errorf("%q: want a host name or address with an optional :port, e.g. api.example.com", h)
		}
	}
	return nil
}

// maxRequestIDPrefix bounds --request-id-prefix: an id is a log's word,
// not a payload.
const maxRequestIDPrefix = 64

// CheckRequestIDPrefix checks a Config.RequestIDPrefix: letters, digits
// and "-_.:", at most 64 of them, so that every id is one token in a
// header and in the server's logs.
func CheckRequestIDPrefix(p string) error {
	if len(p) > maxRequestIDPrefix {
		return fmt.Errorf("%d characters: want at most %d", len(p), maxRequestIDPrefix)
	}
	if !reqid.Plain(p) {
		return fmt.Errorf("%q: want letters, digits and - _ . : only (each request adds its index, e.g. run7- gives run7-0, run7-1, …)", p)
	}
	return nil
}

// hostOnly is the host of a host[:port] (an IPv6 address without its
// brackets).
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// CloseIdleConnections closes the client's idle connections (at the end of
// a run), so the server sees them go at once rather than at a timeout.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// auxDoer sends the client's auxiliary requests (listing models,
// tokenizing) with its Host override.
type auxDoer struct{ c *Client }

func (d auxDoer) Do(req *http.Request) (*http.Response, error) {
	if d.c.cfg.Host != "" {
		req.Host = d.c.cfg.Host
	}
	return d.c.http.Do(req)
}
