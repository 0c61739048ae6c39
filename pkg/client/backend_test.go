package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// TestBackendTable: every API kind has a complete wire format, its requests
// are valid JSON posted to its path, and a client without a kind is refused
// with the list of kinds.
func TestBackendTable(t *testing.T) {
	for _, b := range api.All() {
		w := wires[b]
		if w == nil || w.appendBody == nil || w.read == nil {
			t.Errorf("backend %q: no complete wire format (%v)", b.Name, w)
			continue
		}
		cap := &capture{respond: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusTeapot) }}
		srv := httptest.NewServer(cap)
		c := newTestClient(t, srv, Config{API: b, Stream: true})
		res := do(c, `"hi"`, 4)
		srv.Close()
		if w.contentType != "" { // not JSON: the type says so, and the form parses
			if len(cap.headers) == 1 && cap.headers[0].Get("Content-Type") == w.contentType && len(cap.forms) == 1 && cap.forms[0] != nil {
				cap.bodies[0] = map[string]any{}
			}
		}
		path := api.ExpandPath(b.Path, c.cfg.Model) + w.streamSuffix
		if res.Status != http.StatusTeapot || len(cap.paths) != 1 || cap.paths[0] != path || cap.bodies[0] == nil {
			t.Errorf("backend %q: status %d, paths %v, body %v: want one valid JSON body posted to %s", b.Name, res.Status, cap.paths, cap.bodies, path)
		}
		if w.chunk != nil && c.URL() != srv.URL+path {
			t.Errorf("backend %q: URL %s, want %s", b.Name, c.URL(), srv.URL+path)
		}
		if c.Kind() != b || c.Chat() != b.Has(api.Messages) || res.Measure != b.Measure {
			t.Errorf("backend %q: the client's kind is %v (chat %v), the result measures %v", b.Name, c.Kind(), c.Chat(), res.Measure)
		}
	}
	if _, err := New(Config{BaseURL: "http://x"}); err == nil || !strings.Contains(err.Error(), api.Names()) {
		t.Errorf("no API kind: %v, want an error listing %s", err, api.Names())
	}
}

// TestBackendRecipe adds a throwaway API kind the way a real one is added —
// one row and its body writer and reader, nothing else in the package — and
// sends a request through the ordinary client: the recipe of
// docs/ARCHITECTURE.md, checked.
func TestBackendRecipe(t *testing.T) {
	kind := &api.Kind{Name: "test-count", Path: "/v1/count", Help: "counts words (test)", Measure: api.MeasureTokens}
	echo := &wire{
		appendBody: func(c *Client, b []byte, req *Request) []byte {
			o := c.openBody(b)
			if o.member("input") {
				o.b = req.appendPrompt(o.b)
			}
			return c.closeBody(&o)
		},
		read: func(c *Client, d *decoder, _ *http.Response, rd io.Reader, res *Result) error {
			raw, err := io.ReadAll(io.LimitReader(rd, 1<<10))
			res.End = c.since()
			if err != nil {
				return err
			}
			v, err := fastjson.ParseBytes(raw)
			if err != nil {
				return protocolError{err.Error()}
			}
			res.PromptTokens = v.GetInt("words")
			return nil
		}}
	wires[kind] = echo
	defer delete(wires, kind)

	cap := &capture{respond: func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"words":%d}`, 3)
	}}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: kind})
	res := do(c, `"one two three"`, 1)
	if !res.OK() || res.PromptTokens != 3 || cap.paths[0] != "/v1/count" {
		t.Fatalf("class %q %s, prompt tokens %d, path %v", res.ErrorClass, res.Error, res.PromptTokens, cap.paths)
	}
	body, _ := json.Marshal(cap.bodies[0])
	if string(body) != `{"input":"one two three"}` {
		t.Errorf("body %s", body)
	}
}
