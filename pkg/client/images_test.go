package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func TestImageRequestBody(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra string
		req   Request
		want  map[string]any
	}{
		{
			name: "generation with adapters",
			req: Request{Model: "sdxl", Prompt: []byte(`"a cat"`), Gen: &arrival.Generation{
				Images: 4, Steps: 30, NegativeTokens: 3, LoRAs: []string{"l1", "l2"}, ControlNets: []string{"canny"}}},
			want: map[string]any{"model": "sdxl", "prompt": "a cat", "n": 4.0, "size": "512x512", "num_inference_steps": 30.0,
				"negative_prompt": "blurry lowres watermark", "loras": []any{"l1", "l2"}, "controlnets": []any{"canny"}},
		},
		{
			name: "no generation: one image, the server's steps",
			req:  Request{Prompt: []byte(`"x y"`)},
			want: map[string]any{"model": "m", "prompt": "x y", "n": 1.0, "size": "512x512"},
		},
		{
			name:  "extra body overrides and adds",
			extra: `{"n": 2, "response_format": "url", "guidance_scale": 7.5}`,
			req:   Request{Prompt: []byte(`"x"`), Gen: &arrival.Generation{Images: 8}},
			want:  map[string]any{"model": "m", "prompt": "x", "n": 2.0, "size": "512x512", "response_format": "url", "guidance_scale": 7.5},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Config{BaseURL: "http://127.0.0.1:1", API: api.Images, Model: "m", ImageSize: "512x512", ExtraBody: []byte(c.extra)})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(cl.URL(), "/v1/images/generations") {
				t.Fatalf("URL %s", cl.URL())
			}
			body := cl.AppendBody(nil, &c.req)
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("body %s\nwant %v", body, c.want)
			}
		})
	}
}

func TestImageResponses(t *testing.T) {
	for _, c := range []struct {
		name, status, body   string
		code                 int
		class                string
		generated, promptTok int
	}{
		{name: "b64", code: 200, body: `{"created":1,"data":[{"b64_json":"AAAA"},{"b64_json":"BBBB"}],"usage":{"input_tokens":12,"output_tokens":0}}`, generated: 2, promptTok: 12},
		{name: "url", code: 200, body: `{"created":1,"data":[{"url":"data:image/png;base64,AAAA"}]}`, generated: 1, promptTok: -1},
		{name: "no data", code: 200, body: `{"created":1}`, class: record.ErrProtocol},
		{name: "entry without image", code: 200, body: `{"data":[{"revised_prompt":"x"}]}`, class: record.ErrProtocol},
		{name: "not json", code: 200, body: `<html>`, class: record.ErrProtocol},
		{name: "error object", code: 200, body: `{"error":{"message":"engine died","code":500}}`, class: record.ErrHTTP5xx},
		{name: "404", code: 404, body: `{"object":"error","message":"The model does not exist."}`, class: record.ErrHTTP4xx},
	} {
		t.Run(c.name, func(t *testing.T) {
			cap := &capture{respond: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.code)
				io.WriteString(w, c.body)
			}}
			srv := httptest.NewServer(cap)
			defer srv.Close()
			cl := newTestClient(t, srv, Config{API: api.Images, Stream: true})
			var res Result
			res.Reset()
			cl.Do(context.Background(), &Request{Prompt: []byte(`"p"`), Gen: &arrival.Generation{Images: 2}}, &res)
			if res.ErrorClass != c.class {
				t.Fatalf("class %q (%s), want %q", res.ErrorClass, res.Error, c.class)
			}
			if c.class == "" && (res.Generated != c.generated || res.PromptTokens != c.promptTok || res.FirstToken != 0 || res.End <= res.Sent) {
				t.Fatalf("result %+v", res)
			}
			if cap.paths[0] != "/v1/images/generations" || cap.bodies[0]["stream"] != nil {
				t.Fatalf("path %s, body %v", cap.paths[0], cap.bodies[0])
			}
		})
	}
}
