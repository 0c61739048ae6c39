package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// InProcessClient returns a client whose requests h serves on the
// caller's goroutine: no socket, so a testing/synctest bubble holds the
// whole exchange and its fake clock decides every time. A request whose
// context has ended fails before h sees it, as it would on a network.
func InProcessClient(h http.Handler) *http.Client {
	return &http.Client{Transport: inProcess{h}}
}

type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// Figures is a handler answering with what its format makes of figures
// the test sets (n of them, 0 until set), safe to set while it serves: a
// metrics endpoint whose readings a test moves.
type Figures struct {
	mu     sync.Mutex
	v      []float64
	format func(v []float64) string
}

// NewFigures returns a handler of n figures written by format.
func NewFigures(n int, format func(v []float64) string) *Figures {
	return &Figures{v: make([]float64, n), format: format}
}

// Set sets the first len(v) figures.
func (f *Figures) Set(v ...float64) {
	f.mu.Lock()
	copy(f.v, v)
	f.mu.Unlock()
}

func (f *Figures) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	body := f.format(f.v)
	f.mu.Unlock()
	io.WriteString(w, body)
}
