package secret

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
)

func TestRedactKey(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	for _, tc := range []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"Bearer " + key + " echoed", "Bearer [redacted] echoed"},
		{key + key, "[redacted][redacted]"},
		{`"Bearer sk-test-0123…"`, `"Bearer [redacted]…"`},
		{"sk-tes", "[redacted]"},
		{"sk-te", "sk-te"},
	} {
		if got := Redact(tc.in, key); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Redact("abc", ""); got != "abc" {
		t.Errorf("empty secret: %q", got)
	}
}

func TestURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"http://u:p@h:1/metrics", "http://xxxxx:xxxxx@h:1/metrics"},
		{"https://token@h", "https://xxxxx@h"},
		{`Post "http://alice:***@127.0.0.1:1/v1/completions": dial tcp`, `Post "http://xxxxx:xxxxx@127.0.0.1:1/v1/completions": dial tcp`},
		{"two: http://a:b@x/ and socks5://c:d@y:1080 end", "two: http://xxxxx:xxxxx@x/ and socks5://xxxxx:xxxxx@y:1080 end"},
		{"a p@ss in http://u:p@ss@h/x", "a p@ss in http://xxxxx:xxxxx@h/x"}, // the last @ ends the credentials
		{"mail a@b.c, see http://h/a@b", "mail a@b.c, see http://h/a@b"},    // an @ in the path is no credential
		{"://x@y", "://x@y"}, // no scheme
	} {
		if got := URLs(tc.in); got != tc.want {
			t.Errorf("URLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactorURLCredentials: the user and password of a URL are hidden
// wherever they appear, with the Basic token made of them; a short user
// name only inside URLs.
func TestRedactorURLCredentials(t *testing.T) {
	r := New("sk-key-abcdef")
	r.AddURL("http://alice-admin:s3cr%40t-pw@h:8000")
	r.AddURL("http://bo@h") // too short to hide outside a URL
	r.AddURL("not a url")
	basic := base64.StdEncoding.EncodeToString([]byte("alice-admin:s3cr@t-pw"))
	in := fmt.Sprintf("user alice-admin pw s3cr@t-pw esc s3cr%%40t-pw basic %s key sk-key-abcdef bo http://bo@h/ http://alice-admin:s3cr%%40t-pw@h:8000/x", basic)
	got := r.String(in)
	for _, s := range []string{"alice-admin", "s3cr@t-pw", "s3cr%40t-pw", basic, "sk-key-abcdef", "bo@"} {
		if bytes.Contains([]byte(got), []byte(s)) {
			t.Errorf("%q holds %q", got, s)
		}
	}
	if want := " bo http://xxxxx@h/ "; !bytes.Contains([]byte(got), []byte(want)) {
		t.Errorf("%q: want %q (a short user name stays outside URLs)", got, want)
	}
	var nilR *Redactor
	if got := nilR.String("http://u:p@h"); got != "http://xxxxx:xxxxx@h" {
		t.Errorf("nil redactor: %q", got)
	}
}

func TestProxyEnv(t *testing.T) {
	for _, k := range ProxyEnv {
		t.Setenv(k, "")
	}
	t.Setenv("HTTPS_PROXY", "proxyuser1:proxypass1@proxy:3128")
	t.Setenv("all_proxy", "socks5://proxyuser2:proxypass2@proxy:1080")
	r := &Redactor{}
	r.AddProxyEnv()
	got := r.String("proxyuser1 proxypass1 proxyuser2 proxypass2")
	if got != "[redacted] [redacted] [redacted] [redacted]" {
		t.Errorf("%q", got)
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b, New("sk-key-abcdef"))
	n, err := fmt.Fprintf(w, "warning: GET http://u:p@h/metrics with sk-key-abcdef\n")
	if err != nil || n != len("warning: GET http://u:p@h/metrics with sk-key-abcdef\n") {
		t.Errorf("n %d, err %v", n, err)
	}
	fmt.Fprint(w, "plain\n")
	if got := b.String(); got != "warning: GET http://xxxxx:xxxxx@h/metrics with [redacted]\nplain\n" {
		t.Errorf("%q", got)
	}
}
