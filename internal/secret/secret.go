// Package secret keeps credentials out of everything the tool prints or
// writes: API keys, and the user and password of any URL it is given.
package secret

import (
	"encoding/base64"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
)

// Mask replaces a secret in text; URL credentials become Mask:Mask, so a
// redacted URL still parses.
const (
	Mask    = "[redacted]"
	URLMask = "xxxxx"
)

// prefixMin is the shortest start of a secret that is redacted on its own
// (a copy cut short by truncation); literalMin the shortest secret redacted
// wherever it appears (a shorter one, e.g. a one-letter user name, is
// redacted only where it stands in a URL).
const (
	prefixMin  = 6
	literalMin = 4
)

// Redactor hides a set of secrets. The zero value and nil hide only URL
// credentials. Add secrets before it is used concurrently.
type Redactor struct {
	secrets []string
}

// New returns a Redactor of the given secrets (empty ones are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add adds secrets.
func (r *Redactor) Add(secrets ...string) {
	for _, s := range secrets {
		if len(s) >= literalMin && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret that starts another is not replaced
	// inside it.
	slices.SortStableFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// AddURL adds the credentials of raw (a URL, or anything else, which adds
// nothing): its user, its password, and the Basic authorization token Go's
// HTTP client makes of them.
func (r *Redactor) AddURL(raw string) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return
	}
	user := u.User.Username()
	pass, _ := u.User.Password()
	r.Add(user, pass, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	// The forms written in the URL, escapes and all.
	if i := strings.Index(raw, "://"); i >= 0 {
		auth := raw[i+3:]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			rawUser, rawPass, _ := strings.Cut(auth[:at], ":")
			r.Add(rawUser, rawPass)
		}
	}
}

// ProxyEnv lists the environment variables Go's HTTP client takes proxies
// from.
var ProxyEnv = []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}

// AddProxyEnv adds the credentials of the proxies set in the environment.
func (r *Redactor) AddProxyEnv() {
	for _, k := range ProxyEnv {
		v := os.Getenv(k)
		if v != "" && !strings.Contains(v, "://") {
			v = "http://" + v // Go's client reads a bare host[:port] as http
		}
		r.AddURL(v)
	}
}

// String returns s with the credentials of every URL in it hidden, every
// secret replaced by Mask, and so every run of at least prefixMin
// characters that starts like a secret.
func (r *Redactor) String(s string) string {
	s = URLs(s)
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	for _, sec := range r.secrets {
		s = prefixes(s, sec)
	}
	return s
}

// Redact returns s without secret (see Redactor.String).
func Redact(s, secret string) string { return New(secret).String(s) }

// prefixes replaces every run of at least prefixMin characters that starts
// like secret.
func prefixes(s, secret string) string {
	k := min(len(secret), prefixMin)
	var b strings.Builder
	for {
		i := strings.Index(s, secret[:k])
		if i < 0 {
			break
		}
		n := k
		for n < len(secret) && i+n < len(s) && s[i+n] == secret[n] {
			n++
		}
		b.WriteString(s[:i])
		b.WriteString(Mask)
		s = s[i+n:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// URL returns raw with its user and password (if any) replaced by URLMask.
// A string that is not a URL is returned as it is.
func URL(raw string) string { return URLs(raw) }

// URLs returns s with the credentials of every URL in it ("scheme://user:
// password@host") replaced by URLMask.
func URLs(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := i + 3
		// The authority ends at the first '/', '?', '#' or blank; its
		// credentials at its last '@'.
		end := start
		for end < len(rest) && !strings.ContainsRune("/?#\" \t\r\n'<>`", rune(rest[end])) {
			end++
		}
		at := strings.LastIndexByte(rest[start:end], '@')
		if at < 0 || !scheme(rest[:i]) {
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		b.WriteString(rest[:start])
		if strings.Contains(rest[start:start+at], ":") {
			b.WriteString(URLMask + ":" + URLMask)
		} else {
			b.WriteString(URLMask)
		}
		rest = rest[start+at:] // from the '@'
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(rest)
	return b.String()
}

// scheme reports whether before ends with a URL scheme (a letter, then
// letters, digits, '+', '-' or '.').
func scheme(before string) bool {
	j := len(before)
	for j > 0 {
		c := before[j-1]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.' {
			j--
			continue
		}
		break
	}
	return j < len(before) && (before[j] >= 'a' && before[j] <= 'z' || before[j] >= 'A' && before[j] <= 'Z')
}

// Writer returns a writer that redacts every write to w with r. A write is
// redacted on its own, so a secret must not be split across writes (every
// line the tool prints is one write).
func Writer(w io.Writer, r *Redactor) io.Writer { return &writer{w: w, r: r} }

type writer struct {
	w io.Writer
	r *Redactor
}

func (w *writer) Write(p []byte) (int, error) {
	s := w.r.String(string(p))
	if len(s) == len(p) && s == string(p) {
		_, err := w.w.Write(p)
		return len(p), err
	}
	_, err := io.WriteString(w.w, s)
	return len(p), err
}
