//go:build !linux

package mockserver

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Elsewhere than Linux the kernel's receive time is not asked for: the
// handler's entry stands in for it (see rxstamp_linux.go).

func stampListener(ln net.Listener) net.Listener                   { return ln }
func stampContext(ctx context.Context, _ net.Conn) context.Context { return ctx }
func stampHandler(next http.Handler) http.Handler                  { return next }
func received(*http.Request) time.Time                             { return time.Time{} }
