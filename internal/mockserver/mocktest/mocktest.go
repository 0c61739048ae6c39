// Package mocktest starts the built-in server for tests: on 127.0.0.1, on a
// free port, and stopped when the test ends.
package mocktest

import (
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
	port, stop, err := srv.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, port
}
