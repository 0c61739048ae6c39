package exposed

import (
	"net"
	"strings"
	"testing"
)

// TestWarnExposed: a listener bound to any address other than loopback
// (all interfaces included) gets one warning line; loopback none. (No
// test binds a non-loopback address: the addresses are given.)
func TestWarn(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		warn bool
	}{
		{"127.0.0.1", false}, {"127.0.0.2", false}, {"::1", false},
		{"0.0.0.0", true}, {"::", true}, {"192.0.2.10", true}, {"2001:db8::1", true},
	} {
		var b strings.Builder
		got := Warn(&b, "--metrics-addr x", &net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 9090})
		out := b.String()
		if got != tc.warn || (got && (strings.Count(out, "\n") != 1 || !strings.Contains(out, "reachable from other machines") || !strings.Contains(out, "--metrics-addr x"))) || (!got && out != "") {
			t.Errorf("%s: warned %v, %q", tc.ip, got, out)
		}
	}
}
