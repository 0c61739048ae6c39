package mockserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

func post(t *testing.T, url, contentType string, body []byte) (int, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, time.Since(start)
}

// TestPoolingEndpoints: each endpoint answers one vector or score an
// input in vLLM's shape, its usage the inputs' tokens (a score's and a
// rerank's pairs counted whole), after Base + PerToken × those tokens.
func TestPoolingEndpoints(t *testing.T) {
	pc := mockserver.PoolingConfig{Base: time.Millisecond, PerToken: 200 * time.Microsecond, Dims: 8}
	srv, port := mocktest.Start(t, mockserver.Config{Pooling: pc})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	type answer struct {
		Data []struct {
			Index     int
			Embedding json.RawMessage
			Data      []float64
			Score     *float64
		}
		Results []struct {
			Index          int
			RelevanceScore float64 `json:"relevance_score"`
		}
		Usage map[string]any
	}
	for _, tc := range []struct {
		path, body string
		n, tokens  int
		check      func(a answer) error
	}{
		{"/v1/embeddings", `{"model":"mock-model","input":[[1,2,3],[4,5],[6,7,8,9,10]]}`, 3, 10, func(a answer) error {
			var v []float64
			if err := json.Unmarshal(a.Data[2].Embedding, &v); err != nil || len(v) != 8 || a.Data[2].Index != 2 {
				return fmt.Errorf("embedding %s", a.Data[2].Embedding)
			}
			return nil
		}},
		{"/v1/embeddings", `{"input":["one two","three four five"],"encoding_format":"base64"}`, 2, 5, func(a answer) error {
			var s string
			if err := json.Unmarshal(a.Data[0].Embedding, &s); err != nil || len(s) != 44 { // 32 bytes of float32s
				return fmt.Errorf("base64 embedding %s", a.Data[0].Embedding)
			}
			return nil
		}},
		{"/v1/embeddings", `{"input":"a single text of seven words here"}`, 1, 7, nil},
		{"/pooling", `{"input":[[1,2],[3]]}`, 2, 3, func(a answer) error {
			if len(a.Data[1].Data) != 8 {
				return fmt.Errorf("pooled data %v", a.Data[1].Data)
			}
			return nil
		}},
		{"/score", `{"text_1":"what is it","text_2":["it is a cat","no"]}`, 2, 3 + 4 + 3 + 1, func(a answer) error {
			if a.Data[0].Score == nil || *a.Data[0].Score <= 0 || *a.Data[0].Score >= 1 {
				return fmt.Errorf("score %v", a.Data[0].Score)
			}
			return nil
		}},
		{"/v2/rerank", `{"query":"what is it","documents":["it is a cat","no","maybe so"]}`, 3, 3 + 4 + 3 + 1 + 3 + 2, func(a answer) error {
			seen := map[int]bool{}
			for _, r := range a.Results {
				seen[r.Index] = true
			}
			if len(seen) != 3 || !sort.SliceIsSorted(a.Results, func(i, j int) bool { return a.Results[i].RelevanceScore > a.Results[j].RelevanceScore }) {
				return fmt.Errorf("results %+v: want every document once, by score", a.Results)
			}
			if _, ok := a.Usage["completion_tokens"]; ok {
				return fmt.Errorf("rerank usage %v: vLLM's RerankUsage has no completion_tokens", a.Usage)
			}
			return nil
		}},
	} {
		t.Run(tc.path+" "+tc.body[:20], func(t *testing.T) {
			code, b, took := post(t, base+tc.path, "application/json", []byte(tc.body))
			if code != 200 {
				t.Fatalf("%d %s", code, b)
			}
			var a answer
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			if got := len(a.Data) + len(a.Results); got != tc.n || a.Usage["prompt_tokens"] != float64(tc.tokens) {
				t.Errorf("%d entries, usage %v; want %d and %d prompt tokens: %s", got, a.Usage, tc.n, tc.tokens, b)
			}
			if tc.check != nil {
				if err := tc.check(a); err != nil {
					t.Error(err)
				}
			}
			if least := pc.Base + time.Duration(tc.tokens)*pc.PerToken; took < least {
				t.Errorf("answered in %v, before the latency model's %v", took, least)
			}
		})
	}
	if st := srv.Stats(); st.PooledInputs != 13 || st.Completed != 6 {
		t.Errorf("stats: %d inputs pooled, %d completed; want 13 and 6", st.PooledInputs, st.Completed)
	}
	for _, bad := range []struct{ path, body, want string }{
		{"/v1/embeddings", `{"input":[{"x":1}]}`, "a text or a list of token ids"},
		{"/v1/embeddings", `{"prompt":"x"}`, "input: required"},
		{"/rerank", `{"query":"q"}`, "required"},
		{"/score", `{"text_1":"q","text_2":[3]}`, "a text is required"},
		{"/v1/embeddings", `{"model":"nope","input":"x"}`, "does not exist"},
	} {
		code, b, _ := post(t, base+bad.path, "application/json", []byte(bad.body))
		if code/100 != 4 || !strings.Contains(string(b), bad.want) {
			t.Errorf("%s %s: %d %s, want a 4xx saying %q", bad.path, bad.body, code, b, bad.want)
		}
	}
}

// form builds a transcription form with a WAV of seconds and fields.
func form(t *testing.T, wav []byte, fields ...string) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if wav != nil {
		fw, _ := mw.CreateFormFile("file", "a.wav")
		fw.Write(wav)
	}
	for i := 0; i < len(fields); i += 2 {
		mw.WriteField(fields[i], fields[i+1])
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// TestTranscriptions: a WAV's seconds count 50 prompt tokens each; the
// answer is max_completion_tokens tokens, streamed as transcription.chunk
// events with usage last and [DONE], or whole with a duration usage;
// a form without a WAV, or stream options without stream, is a 400.
func TestTranscriptions(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{ITL: time.Millisecond})
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/audio/transcriptions", port)
	wav := client.SyntheticWAV(3, 1)

	ct, body := form(t, wav, "model", "mock-model", "stream", "true", "stream_include_usage", "true", "max_completion_tokens", "5")
	code, b, took := post(t, url, ct, body)
	events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	if code != 200 || len(events) != 7 || events[6] != "data: [DONE]" || took < 4*time.Millisecond {
		t.Fatalf("stream: %d in %v, %d events:\n%s", code, took, len(events), b)
	}
	var last struct {
		Object string
		Usage  map[string]int
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[5], "data: ")), &last); err != nil || last.Object != "transcription.chunk" ||
		last.Usage["prompt_tokens"] != 150 || last.Usage["completion_tokens"] != 5 {
		t.Errorf("usage chunk %s", events[5])
	}
	if !strings.Contains(events[0], `"delta":{"content":" tok"}`) || strings.Contains(events[0], `"index"`) {
		t.Errorf("first chunk %s: want a delta's content and no index in choices", events[0])
	}

	ct, body = form(t, wav, "stream", "false")
	code, b, _ = post(t, url, ct, body)
	var whole struct {
		Text  string
		Usage map[string]any
	}
	if err := json.Unmarshal(b, &whole); code != 200 || err != nil || len(strings.Fields(whole.Text)) != 6 || whole.Usage["seconds"] != 3.0 {
		t.Errorf("whole: %d %s (want 2 tokens a second: 6 words)", code, b)
	}
	if st := srv.Stats(); st.AudioSeconds != 6 || st.PromptTokens != 300 {
		t.Errorf("stats: %v s of audio, %d prompt tokens", st.AudioSeconds, st.PromptTokens)
	}
	for _, bad := range []struct {
		wav    []byte
		fields []string
		want   string
	}{
		{nil, []string{"model", "mock-model"}, "file: required"},
		{[]byte("ID3 not a wav"), nil, "not a WAV"},
		{wav, []string{"stream_include_usage", "true"}, "only be defined when"},
		{wav, []string{"max_completion_tokens", "0"}, "max_completion_tokens"},
	} {
		ct, body := form(t, bad.wav, bad.fields...)
		if code, b, _ := post(t, url, ct, body); code != 400 || !strings.Contains(string(b), bad.want) {
			t.Errorf("%v: %d %s, want 400 saying %q", bad.fields, code, b, bad.want)
		}
	}
	if code, b, _ := post(t, url, "application/json", []byte(`{"file":"x"}`)); code != 400 || !strings.Contains(string(b), "multipart/form-data") {
		t.Errorf("JSON body: %d %s", code, b)
	}
}
