// Package mocktest makes the built-in server for tests and starts it: on
// 127.0.0.1, on a free port, and stopped when the test ends.
package mocktest

import (
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// New returns the server of cfg (model "mock-model" when it names none)
// for a test to serve as it needs.
func New(t testing.TB, cfg mockserver.Config) *mockserver.Server {
	t.Helper()
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"mock-model"}
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// Start serves cfg (model "mock-model" when it names none) on 127.0.0.1
// until the test ends and returns the server and its port.
func Start(t testing.TB, cfg mockserver.Config) (*mockserver.Server, int) {
	t.Helper()
	srv := New(t, cfg)
	port, stop, err := srv.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, port
}
