// Package exposed warns when a listener of the tool is reachable from
// other machines.
package exposed

import (
	"fmt"
	"io"
	"net"
)

// Warn prints one warning line to w when addr, the address a
// listener of the tool is bound to (what names its flag), is not a
// loopback address: whatever it serves is reachable from other machines.
// It reports whether it warned.
func Warn(w io.Writer, what string, addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return false
	}
	fmt.Fprintf(w, "warning: %s: listening on %s, reachable from other machines (bind 127.0.0.1 to keep it on this one)\n", what, tcp)
	return true
}
