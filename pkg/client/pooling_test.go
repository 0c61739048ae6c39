package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// readForm reads a multipart/form-data body into its fields (nil for any
// other body).
func readForm(contentType string, body []byte) map[string]string {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		return nil
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	form := map[string]string{}
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return form
		}
		if err != nil {
			return nil
		}
		b, _ := io.ReadAll(p)
		form[p.FormName()] = string(b)
	}
}

// batchRequest is a request whose parts are word lists "pN wN…" of their
// lengths, so a test sees which part went where and how long it is.
func batchRequest(tokens int) *Request {
	return &Request{MaxTokens: 1, InputTokens: tokens, AppendInput: func(dst []byte, part, n int) []byte {
		dst = append(dst, '"')
		for i := range n {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = fmt.Appendf(dst, "p%d", part)
		}
		return append(dst, '"')
	}}
}

func doBatch(c *Client, tokens int) *Result {
	res := &Result{}
	res.Reset()
	c.Do(context.Background(), batchRequest(tokens), res)
	return res
}

func TestBatchLens(t *testing.T) {
	for _, tc := range []struct {
		total, parts int
		want         string
	}{
		{10, 3, "[4 3 3]"}, {9, 3, "[3 3 3]"}, {2, 4, "[1 1 1 1]"}, {0, 1, "[1]"}, {7, 1, "[7]"},
	} {
		if got := fmt.Sprint(BatchLens(tc.total, tc.parts)); got != tc.want {
			t.Errorf("BatchLens(%d, %d) = %s, want %s", tc.total, tc.parts, got, tc.want)
		}
	}
}

// words are the lengths of a JSON list of strings of words.
func words(v any) []int {
	var n []int
	for _, s := range v.([]any) {
		n = append(n, len(strings.Fields(s.(string))))
	}
	return n
}

// TestPoolingBodies: each batching row posts its path a body of its
// shape, the arrival's tokens split over --batch-size inputs (a query
// first for rerank and score), and reads its answer's count, vector size
// and usage; no token figure is set.
func TestPoolingBodies(t *testing.T) {
	vec := `[0.1,-0.2,0.3,0.4]`
	for _, tc := range []struct {
		backend *api.Kind
		answer  string
		check   func(body map[string]any) error
		dims    int
	}{
		{api.Embeddings, `{"object":"list","data":[{"index":0,"object":"embedding","embedding":` + vec + `},{"index":1,"object":"embedding","embedding":` + vec + `},{"index":2,"object":"embedding","embedding":` + vec + `}],"usage":{"prompt_tokens":10,"total_tokens":10}}`,
			func(b map[string]any) error { return want(fmt.Sprint(words(b["input"])), "[4 3 3]") }, 4},
		{api.Pooling, `{"data":[{"index":0,"object":"pooling","data":[[1,2],[3,4],[5,6]]},{"index":1,"data":[[1]]},{"index":2,"data":[[1]]}],"usage":{"prompt_tokens":10}}`,
			func(b map[string]any) error { return want(fmt.Sprint(words(b["input"])), "[4 3 3]") }, 3},
		{api.Embeddings, `{"data":[{"embedding":"AAAAPwAAgD8AAAAA"},{"embedding":"AAAAPwAAgD8AAAAA"},{"embedding":"AAAAPwAAgD8AAAAA"}],"usage":{"prompt_tokens":10}}`,
			func(map[string]any) error { return nil }, 3},
		{api.Rerank, `{"id":"x","model":"m","usage":{"prompt_tokens":10,"total_tokens":10},"results":[{"index":2,"document":{"text":"a","multi_modal":null},"relevance_score":0.9},{"index":0,"document":{"text":"b"},"relevance_score":0.5},{"index":1,"document":{"text":"c"},"relevance_score":0.1}]}`,
			func(b map[string]any) error {
				return want(fmt.Sprintf("%d %v", len(strings.Fields(b["query"].(string))), words(b["documents"])), "3 [3 2 2]")
			}, 0},
		{api.Score, `{"id":"x","object":"list","data":[{"index":0,"object":"score","score":0.9},{"index":1,"object":"score","score":0.1},{"index":2,"object":"score","score":0.2}],"usage":{"prompt_tokens":10}}`,
			func(b map[string]any) error {
				return want(fmt.Sprintf("%d %v", len(strings.Fields(b["text_1"].(string))), words(b["text_2"])), "3 [3 2 2]")
			}, 0},
	} {
		t.Run(tc.backend.Name, func(t *testing.T) {
			cap := &capture{respond: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			}}
			srv := httptest.NewServer(cap)
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: tc.backend, BatchSize: 3, Stream: true})
			res := doBatch(c, 10)
			if !res.OK() {
				t.Fatalf("%s: %s", res.ErrorClass, res.Error)
			}
			row := tc.backend
			if cap.paths[0] != row.Path || cap.bodies[0]["model"] != "m" {
				t.Errorf("path %s, body %v", cap.paths[0], cap.bodies[0])
			}
			if err := tc.check(cap.bodies[0]); err != nil {
				t.Errorf("body %v: %v", cap.bodies[0], err)
			}
			if res.Inputs != 3 || res.Returned != 3 || res.Dims != tc.dims || res.PromptTokens != 10 || res.Measure != row.Measure {
				t.Errorf("inputs %d returned %d dims %d prompt %d measure %v, want 3 3 %d 10 %v", res.Inputs, res.Returned, res.Dims, res.PromptTokens, res.Measure, tc.dims, row.Measure)
			}
			if res.FirstToken != 0 || len(res.TokenTimes) != 0 || res.End <= res.Sent {
				t.Errorf("first token %v, %d token times, end %v after send %v: a pooling answer has no token", res.FirstToken, len(res.TokenTimes), res.End, res.Sent)
			}
		})
	}
}

func want(got, want string) error {
	if got != want {
		return fmt.Errorf("got %s, want %s", got, want)
	}
	return nil
}

// TestPoolingBadAnswers: an answer with a vector or a score too few or
// too many, one that is not JSON or not whole, an error object, one larger
// than the bound, and one holding NaN, Infinity or an empty vector are
// protocol errors (or the error's class) that say so.
func TestPoolingBadAnswers(t *testing.T) {
	two := `{"data":[{"embedding":[1]},{"embedding":[2]}]}`
	for _, tc := range []struct {
		name               string
		backend            *api.Kind
		answer, class, msg string
		bound              int64
	}{
		{"too few", api.Embeddings, two, record.ErrProtocol, "holds 2 vectors for the 3 inputs sent", 0},
		{"too many", api.Score, `{"data":[{"score":1},{"score":1},{"score":1},{"score":1}]}`, record.ErrProtocol, "holds 4 scores for the 3 inputs sent", 0},
		{"no list", api.Rerank, `{"id":"x"}`, record.ErrProtocol, "no results list", 0},
		{"not json", api.Embeddings, `<html>oops</html>`, record.ErrProtocol, "not a JSON object", 0},
		{"cut short", api.Embeddings, `{"data":[{"embedding":[1,2`, record.ErrProtocol, "not a complete JSON object", 0},
		{"brackets", api.Embeddings, `{"data":[{"embedding":[1,2}]}`, record.ErrProtocol, "brackets do not match", 0},
		{"error object", api.Embeddings, `{"error":{"message":"busy","type":"x","code":503}}`, record.ErrHTTP5xx, "busy", 0},
		// Python's json writes NaN and Infinity (no JSON has them): such a
		// vector, or score, is no result; nor is an empty vector.
		{"NaN in a vector", api.Embeddings, `{"data":[{"embedding":[1]},{"embedding":[NaN, 2]},{"embedding":[3]}]}`, record.ErrProtocol, "not a finite number", 0},
		{"Infinity in the first vector", api.Pooling, `{"data":[{"data":[-Infinity]},{"data":[2]},{"data":[3]}]}`, record.ErrProtocol, "not a finite number", 0},
		{"Infinity score", api.Rerank, `{"results":[{"index":0,"relevance_score":Infinity},{"index":1,"relevance_score":0.5},{"index":2,"relevance_score":0.1}]}`, record.ErrProtocol, "not a finite number", 0},
		{"NaN score", api.Score, `{"data":[{"score":0.5},{"score":NaN},{"score":0.1}]}`, record.ErrProtocol, "not a finite number", 0},
		{"an empty vector", api.Embeddings, `{"data":[{"embedding":[1]},{"embedding":[ ]},{"embedding":[3]}]}`, record.ErrProtocol, "holds 1 empty vector", 0},
		{"an empty first vector", api.Embeddings, `{"data":[{"embedding":[]},{"embedding":[2]},{"embedding":[3]}]}`, record.ErrProtocol, "holds 1 empty vector", 0},
		{"an empty base64 vector", api.Embeddings, `{"data":[{"embedding":"AAAAPw=="},{"embedding":""},{"embedding":"AAAAPw=="}]}`, record.ErrProtocol, "holds 1 empty vector", 0},
		{"oversized", api.Embeddings, `{"data":[{"embedding":[` + strings.Repeat("0.125,", 400) + `1]}]}`, record.ErrProtocol, "answer larger than", 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bound > 0 {
				defer func(b int64) { maxVectorResponse = b }(maxVectorResponse)
				maxVectorResponse = tc.bound
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			res := doBatch(newTestClient(t, srv, Config{API: tc.backend, BatchSize: 3}), 12)
			if res.OK() || res.ErrorClass != tc.class || !strings.Contains(res.Error, tc.msg) {
				t.Errorf("class %q error %q, want %s %q", res.ErrorClass, res.Error, tc.class, tc.msg)
			}
		})
	}
}

// TestRerankTopN: a rerank asked for its top_n (--extra-request-body) may
// answer fewer results than documents, never more.
func TestRerankTopN(t *testing.T) {
	answer := `{"results":[{"index":1,"relevance_score":0.9}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, answer) }))
	defer srv.Close()
	for _, tc := range []struct {
		extra string
		ok    bool
	}{{`{"top_n":1}`, true}, {``, false}} {
		res := doBatch(newTestClient(t, srv, Config{API: api.Rerank, BatchSize: 3, ExtraBody: []byte(tc.extra)}), 12)
		if res.OK() != tc.ok || res.Returned != 1 {
			t.Errorf("extra %q: ok %v (%s), returned %d; want ok %v", tc.extra, res.OK(), res.Error, res.Returned, tc.ok)
		}
	}
	answer = `{"results":[{"index":0},{"index":1},{"index":2},{"index":3}]}`
	if res := doBatch(newTestClient(t, srv, Config{API: api.Rerank, BatchSize: 3, ExtraBody: []byte(`{"top_n":1}`)}), 12); res.OK() {
		t.Error("4 results for 3 documents accepted")
	}
}

// TestTranscriptionForm: the request is a multipart form with a WAV of
// --audio-seconds (the same bytes for the same seed), the model, the
// output length and the stream flags; a stream's chunks are tokens (TTFT
// and ITL), its usage counted; a whole answer's words are its tokens.
func TestTranscriptionForm(t *testing.T) {
	chunk := func(s string) string {
		return `{"id":"trsc-1","object":"transcription.chunk","created":1,"model":"m","choices":[{"delta":{"content":"` + s + `"},"finish_reason":null,"stop_reason":null}]}`
	}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			cap := &capture{respond: func(w http.ResponseWriter, r *http.Request) {
				if stream {
					sse(chunk(" The"), chunk(" cat"), chunk(" sat"), `{"id":"trsc-1","object":"transcription.chunk","choices":[],"usage":{"prompt_tokens":100,"total_tokens":103,"completion_tokens":3}}`, "[DONE]")(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"text":"The cat sat down","usage":{"type":"duration","seconds":2}}`)
			}}
			srv := httptest.NewServer(cap)
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: api.Transcriptions, Stream: stream, AudioSeconds: 2, AudioSeed: 9, ExtraBody: []byte(`{"language":"en","top_k":5}`)})
			res := do(c, `""`, 3)
			if !res.OK() {
				t.Fatalf("%s: %s", res.ErrorClass, res.Error)
			}
			f := cap.forms[0]
			if f == nil || f["model"] != "m" || f["max_completion_tokens"] != "3" || f["stream"] != strconv.FormatBool(stream) ||
				(f["stream_include_usage"] == "true") != stream || f["language"] != "en" || f["top_k"] != "5" {
				t.Errorf("form %v", func() map[string]string {
					g := map[string]string{}
					for k, v := range f {
						g[k] = truncate(v, 20)
					}
					return g
				}())
			}
			wav := []byte(f["file"])
			if !bytes.Equal(wav, SyntheticWAV(2, 9)) || string(wav[:4]) != "RIFF" || binary.LittleEndian.Uint32(wav[40:]) != 2*2*AudioSampleRate {
				t.Errorf("file: %d bytes, not the 2 s WAV of seed 9", len(wav))
			}
			if res.InputLen != 100 {
				t.Errorf("input length %d, want the 2 s audio's 100 tokens", res.InputLen)
			}
			if stream {
				if res.FirstToken <= res.Sent || len(res.TokenTimes) != 3 || res.CompletionTokens != 3 || res.PromptTokens != 100 {
					t.Errorf("first token %v sent %v, %d token times, completion %d, prompt %d", res.FirstToken, res.Sent, len(res.TokenTimes), res.CompletionTokens, res.PromptTokens)
				}
			} else if res.CompletionTokens != 4 || res.FirstToken != res.End {
				t.Errorf("completion tokens %d (want the 4 words), first token %v end %v", res.CompletionTokens, res.FirstToken, res.End)
			}
		})
	}
	if bytes.Equal(SyntheticWAV(1, 1), SyntheticWAV(1, 2)) || !bytes.Equal(SyntheticWAV(1, 1), SyntheticWAV(1, 1)) {
		t.Error("the WAV is not a function of its seed")
	}
	if _, err := New(Config{BaseURL: "http://x", API: api.Transcriptions, AudioSeconds: MaxAudioSeconds + 1}); err == nil {
		t.Error("an audio longer than MaxAudioSeconds was accepted")
	}
}

// FuzzVectorScan checks the scanner of pooling answers against
// encoding/json: it never panics, never counts more than the bytes allow,
// and on an answer encoding/json reads as an object whose data (or
// results) list holds objects it counts exactly those, and the first
// embedding's length.
func FuzzVectorScan(f *testing.F) {
	for _, s := range []string{
		`{"data":[{"embedding":[1,2,3]},{"embedding":[4]}],"usage":{"prompt_tokens":3}}`,
		`{"object":"list","data":[{"index":0,"embedding":"AAAAPwAAgD8AAAAA"}]}`,
		`{"results":[{"index":1,"relevance_score":0.5,"document":{"text":"a, [b] {c}"}}]}`,
		`{"data":[{"data":[[1,2],[3]]}],"error":null}`,
		`{"data":[]}`, `{"data":[1,2]}`, `[]`, `{"data":[{"embedding":[1,2}]}`, `{"a":"\"}{["}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, sc := range []vectorScan{
			{lists: [2]string{"data", "data"}, vec: [2]string{"embedding", "data"}},
			{lists: [2]string{"data", "results"}},
		} {
			err := sc.read(bytes.NewReader(b), make([]byte, 7)) // small reads: state across them
			if sc.entries > len(b)/2 {
				t.Fatalf("%d entries in %d bytes", sc.entries, len(b))
			}
			var v map[string]json.RawMessage
			if json.Unmarshal(b, &v) != nil || v == nil || !plainKeys(b) {
				continue // not JSON, or keys the scanner need not read: escaped, or given twice (no server sends them)
			}
			if err != nil {
				t.Fatalf("a JSON object refused: %v: %q", err, b)
			}
			list := v[sc.lists[0]]
			if _, ok := v[sc.lists[1]]; ok && sc.lists[1] != sc.lists[0] {
				continue // both lists: which one counts is the scanner's choice
			}
			var items []json.RawMessage
			if json.Unmarshal(list, &items) != nil {
				continue
			}
			objects, dims := 0, -1
			for _, it := range items {
				var o map[string]json.RawMessage
				if json.Unmarshal(it, &o) != nil {
					continue
				}
				objects++
				if objects == 1 && sc.vec[0] != "" {
					var vec []json.RawMessage
					if json.Unmarshal(o["embedding"], &vec) == nil && o["data"] == nil {
						dims = len(vec)
					}
				}
			}
			if sc.entries != objects || (dims >= 0 && sc.dims != dims) {
				t.Fatalf("counted %d entries of %d dims, encoding/json %d of %d: %q", sc.entries, sc.dims, objects, dims, b)
			}
		}
	})
}

// plainKeys reports whether the top-level object b has no key twice and no
// \u escape anywhere.
func plainKeys(b []byte) bool {
	if bytes.Contains(b, []byte(`\u`)) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if seen[fmt.Sprint(k)] {
			return false
		}
		seen[fmt.Sprint(k)] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return true
}

// BenchmarkVectorScan reads an embeddings answer of 32 vectors of 1,024
// floats (about 300 KB) with the scanner, in 32 KiB reads.
func BenchmarkVectorScan(b *testing.B) {
	var ans bytes.Buffer
	ans.WriteString(`{"object":"list","data":[`)
	for i := range 32 {
		if i > 0 {
			ans.WriteByte(',')
		}
		fmt.Fprintf(&ans, `{"index":%d,"object":"embedding","embedding":[`, i)
		for j := range 1024 {
			if j > 0 {
				ans.WriteByte(',')
			}
			fmt.Fprintf(&ans, "%.6f", float64(j%97)/97-0.5)
		}
		ans.WriteString("]}")
	}
	ans.WriteString(`],"usage":{"prompt_tokens":4096,"total_tokens":4096}}`)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(ans.Len()))
	b.ReportAllocs()
	for b.Loop() {
		sc := vectorScan{lists: [2]string{"data", "data"}, vec: [2]string{"embedding", "data"}}
		if err := sc.read(bytes.NewReader(ans.Bytes()), buf); err != nil || sc.entries != 32 || sc.dims != 1024 {
			b.Fatal(err, sc.entries, sc.dims)
		}
	}
}
