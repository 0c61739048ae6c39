package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// FuzzParseExtra: --extra-request-body either is rejected or yields a
// valid JSON body carrying every member it gave, with the values it gave.
func FuzzParseExtra(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"top_k": 5}`, `{"model":"x","prompt":[9],"stream":false}`, `{"a":1,"a":2}`,
		`[1]`, `null`, `{"a":`, `{} {}`, `{}]`, `{"\u00e9<>&":"\ud800"}`, " {\"x\":{\"y\":[1,2,{}]}}\n",
		`{"max_tokens":1,"temperature":1,"stream":false,"stream_options":null,"ignore_eos":false,"min_tokens":0}`,
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, chat bool) {
		_, _, err := api.ParseExtraBody([]byte(raw))
		if err != nil {
			if _, nerr := New(Config{BaseURL: "http://x", API: api.VLLM, ExtraBody: []byte(raw)}); nerr == nil {
				t.Fatalf("parseExtra rejects %q (%v) but New accepts it", raw, err)
			}
			return
		}
		backend := api.VLLM
		if chat {
			backend = api.Chat
		}
		c, err := New(Config{BaseURL: "http://x", API: backend, Model: "m", Stream: true, IgnoreEOS: true, ExtraBody: []byte(raw)})
		if err != nil {
			t.Fatalf("New rejects %q accepted by parseExtra: %v", raw, err)
		}
		body := c.AppendBody(nil, &Request{MaxTokens: 3, Prompt: []byte(`[1,2]`)})
		var got map[string]json.RawMessage
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("body %s is not a JSON object: %v", body, err)
		}
		var want map[string]json.RawMessage
		json.Unmarshal([]byte(raw), &want)
		for k, v := range want {
			var a, b bytes.Buffer
			json.Compact(&a, v)
			json.Compact(&b, got[k])
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("member %q: body has %s, extra body %s (body %s)", k, b.Bytes(), a.Bytes(), body)
			}
		}
	})
}

// bodyTransport answers every request with a canned response, without a
// network.
type bodyTransport struct {
	status int
	ctype  string
	body   []byte
	split  uint64
}

func (bt *bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body)
	req.Body.Close()
	h := http.Header{}
	if bt.ctype != "" {
		h.Set("Content-Type", bt.ctype)
	}
	return &http.Response{
		StatusCode: bt.status, Status: http.StatusText(bt.status), Header: h,
		Body: io.NopCloser(&splitReader{b: bt.body, seed: bt.split}), Request: req,
	}, nil
}

// splitReader returns b in reads of pseudo-random sizes (1–64 bytes).
type splitReader struct {
	b    []byte
	seed uint64
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.seed = r.seed*6364136223846793005 + 1442695040888963407
	n := min(int(r.seed>>58)+1, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// FuzzStream feeds arbitrary response bodies, statuses and content types
// through Do: it must never panic, and every response must end as a
// success or one of the error classes.
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		"data: " + tok + "\n\ndata: " + tok + "\n\ndata: " + usage + "\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n",
		"data: " + tok + "\n\n",
		"data: {\"choices\":[\n\n",
		"data: {\"error\":{\"message\":\"boom\",\"code\":503}}\n\n",
		": keep-alive\n\nevent: x\nid: 1\nretry: 5\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"text\":\"a\"}]}\ndata: more\n\n",
		"\x00\xff<html>",
		`{"choices":[{"text":"a"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":{"message":"x","code":"400"}}`,
		"data: [DONE]\n\ndata: {\n\n",
		"data:" + strings.Repeat("x", 3000) + "\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"},{\"type\":\"image_url\",\"image_url\":{}}]}}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":{\"t\":1}}}]}\n\ndata: {\"usage\":{\"completion_tokens\":9}}\n\ndata: [DONE]\n\n",
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}],"usage":{"completion_tokens":2}}`,
	} {
		f.Add([]byte(s), uint16(200), uint8(0), false, uint64(1))
	}
	f.Add([]byte(`{"object":"error","message":"bad","code":400}`), uint16(400), uint8(1), true, uint64(7))
	f.Add([]byte(`{"choices":[{"text":"a"}]}`), uint16(200), uint8(1), false, uint64(3))
	f.Fuzz(func(t *testing.T, body []byte, status uint16, ctype uint8, chat bool, split uint64) {
		code := 100 + int(status)%500
		if code < 200 {
			code = 200
		}
		bt := &bodyTransport{status: code, ctype: []string{"text/event-stream", "application/json", ""}[ctype%3], body: body, split: split}
		backend := api.VLLM
		if chat {
			backend = api.Chat
		}
		c, err := New(Config{BaseURL: "http://x", API: backend, Model: "m", Stream: ctype%4 != 3, Transport: bt, Epoch: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		res := &Result{}
		res.Reset()
		c.Do(context.Background(), &Request{MaxTokens: 2, Prompt: []byte(`[1]`)}, res)
		if res.ErrorClass != "" && !slices.Contains(record.ErrorClasses, res.ErrorClass) {
			t.Fatalf("unknown error class %q (%s)", res.ErrorClass, res.Error)
		}
		if res.ErrorClass != "" && res.Error == "" {
			t.Fatalf("class %q without a message", res.ErrorClass)
		}
		if code != 200 && res.OK() {
			t.Fatalf("status %d counted as a success", code)
		}
		if res.End < res.Sent || res.Status != code {
			t.Fatalf("sent %v end %v status %d (want %d)", res.Sent, res.End, res.Status, code)
		}
		if len(res.Error) > 600 {
			t.Fatalf("error message of %d bytes: not truncated", len(res.Error))
		}
		for i := 1; i < len(res.TokenTimes); i++ {
			if res.TokenTimes[i] < res.TokenTimes[i-1] {
				t.Fatalf("token times go back: %v", res.TokenTimes)
			}
		}
	})
}

// FuzzLineReader: however the body is split into reads, the line reader
// returns the lines a plain split gives.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"", "a", "a\n", "a\r\nb\n\nc", "\n\n\r\n", "data: x\r", strings.Repeat("y", 300) + "\nz"} {
		f.Add([]byte(s), uint64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint64) {
		var want [][]byte
		rest := data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				want = append(want, rest) // the final unterminated line, as read
				break
			}
			want = append(want, bytes.TrimSuffix(rest[:i], []byte("\r")))
			rest = rest[i+1:]
		}
		var l lineReader
		l.reset(&splitReader{b: data, seed: split}, make([]byte, 16))
		l.now = time.Now
		var got [][]byte
		for {
			line, _, err := l.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			got = append(got, bytes.Clone(line))
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}
