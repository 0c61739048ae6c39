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

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// newTransport returns the transport cfg selects for requests to base,
// keeping up to idle connections open between requests.
func newTransport(cfg *Config, base string, idle int) (http.RoundTripper, error) {
	name := cmp.Or(cfg.HTTPTransport, api.TransportAuto)
	if err := api.CheckTransport(name, base); err != nil {
		return nil, err
	}
	secure := strings.HasPrefix(strings.ToLower(base), "https://")
	if (name == api.TransportAuto || name == api.TransportLean) && !secure && !proxied(base) {
		return newLeanTransport(idle), nil
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	var p http.Protocols
	switch name {
	case api.TransportHTTP1:
		p.SetHTTP1(true)
	case api.TransportH2:
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
