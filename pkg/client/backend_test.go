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
)

// TestBackendTable: every row is complete and reachable by its name, its
// requests are valid JSON posted to its path, and the help and the error
// for an unknown name list every row.
func TestBackendTable(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Backends() {
		if seen[b.Name] {
			t.Errorf("backend %q twice in the table", b.Name)
		}
		seen[b.Name] = true
		if got, ok := LookupBackend(b.Name); !ok || got != b {
			t.Errorf("LookupBackend(%q) = %v, %v", b.Name, got, ok)
		}
		if !strings.HasPrefix(b.Path, "/") || b.Help == "" || b.appendBody == nil || b.read == nil {
			t.Errorf("backend %q: incomplete row (path %q, help %q, body %v, read %v)", b.Name, b.Path, b.Help, b.appendBody != nil, b.read != nil)
		}
		if b.GeneratesImages && b.Measure.Tokens() {
			t.Errorf("backend %q generates images but is measured in tokens", b.Name)
		}
		if !strings.Contains(BackendNames(), b.Name) || !strings.Contains(BackendHelp(), b.Name) || !strings.Contains(BackendHelp(), b.Path) {
			t.Errorf("backend %q missing from %q or %q", b.Name, BackendNames(), BackendHelp())
		}
		cap := &capture{respond: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusTeapot) }}
		srv := httptest.NewServer(cap)
		c := newTestClient(t, srv, Config{Backend: b.Name, Stream: true})
		res := do(c, `"hi"`, 4)
		srv.Close()
		if b.ContentType != "" { // not JSON: the type says so, and the form parses
			if len(cap.headers) == 1 && cap.headers[0].Get("Content-Type") == b.ContentType && len(cap.forms) == 1 && cap.forms[0] != nil {
				cap.bodies[0] = map[string]any{}
			}
		}
		if res.Status != http.StatusTeapot || len(cap.paths) != 1 || cap.paths[0] != b.Path || cap.bodies[0] == nil {
			t.Errorf("backend %q: status %d, paths %v, body %v: want one valid JSON body posted to %s", b.Name, res.Status, cap.paths, cap.bodies, b.Path)
		}
		if c.Backend() != b || c.Chat() != b.Chat {
			t.Errorf("backend %q: the client's row is %v", b.Name, c.Backend())
		}
	}
	if _, ok := LookupBackend("openai-imagez"); ok {
		t.Error("an unknown name was found")
	}
	if _, err := New(Config{BaseURL: "http://x", Backend: "nope"}); err == nil || !strings.Contains(err.Error(), BackendNames()) {
		t.Errorf("unknown backend: %v, want an error listing %s", err, BackendNames())
	}
}

// TestBackendRecipe adds a throwaway API kind the way a real one is added —
// one row and its body writer and reader, nothing else in the package — and
// sends a request through the ordinary client: the recipe of
// docs/ARCHITECTURE.md, checked.
func TestBackendRecipe(t *testing.T) {
	echo := &Backend{Name: "test-count", Path: "/v1/count", Help: "counts words (test)", Measure: MeasureTokens,
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
	backends = append(backends, echo)
	defer func() { backends = backends[:len(backends)-1] }()

	cap := &capture{respond: func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"words":%d}`, 3)
	}}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{Backend: "test-count"})
	res := do(c, `"one two three"`, 1)
	if !res.OK() || res.PromptTokens != 3 || cap.paths[0] != "/v1/count" {
		t.Fatalf("class %q %s, prompt tokens %d, path %v", res.ErrorClass, res.Error, res.PromptTokens, cap.paths)
	}
	body, _ := json.Marshal(cap.bodies[0])
	if string(body) != `{"input":"one two three"}` {
		t.Errorf("body %s", body)
	}
	if !strings.Contains(BackendHelp(), "test-count: counts words") {
		t.Errorf("help %q lacks the new row", BackendHelp())
	}
}
