package scrape

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFetch: a 200 body reaches parse, bounded; another status is an error
// naming the shown URL, never the real one's credentials.
func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "up 1\n")
	}))
	defer srv.Close()
	var got string
	err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics", "shown", func(r io.Reader) error {
		b, err := io.ReadAll(r)
		got = string(b)
		return err
	})
	if err != nil || got != "up 1\n" {
		t.Fatalf("body %q, %v", got, err)
	}
	err = Fetch(context.Background(), srv.Client(), strings.Replace(srv.URL, "http://", "http://u:secret@", 1)+"/bad", "http://127.0.0.1/bad", func(io.Reader) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "GET http://127.0.0.1/bad: 503") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v", err)
	}
	if Timeout(100*time.Millisecond) != time.Second || Timeout(time.Minute) != 10*time.Second || Timeout(3*time.Second) != 3*time.Second {
		t.Error("the timeout is the interval between 1 s and 10 s")
	}
}
