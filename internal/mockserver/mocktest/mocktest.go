// Package mocktest starts the built-in server for tests: on 127.0.0.1, on a
// free port, and stopped when the test ends.
package mocktest

import (
	"context"
	"net"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// Start serves cfg (model "mock-model" when it names none) on 127.0.0.1
// and returns the server and its port.
func Start(t testing.TB, cfg mockserver.Config) (*mockserver.Server, int) {
	t.Helper()
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"mock-model"}
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, ln.Addr().(*net.TCPAddr).Port
}
