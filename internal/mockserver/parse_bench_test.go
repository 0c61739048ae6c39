package mockserver

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// The request parsing of the server (fastjson) against encoding/json into
// go-openai's request types, doing the same work: the figures the server
// needs of a request (docs/ARCHITECTURE.md, "Dependencies").

// openaiCompletion is go-openai's completion request with the vLLM fields
// it does not carry.
type openaiCompletion struct {
	openai.CompletionRequest
	IgnoreEOS bool `json:"ignore_eos"`
	MinTokens int  `json:"min_tokens"`
}

type openaiChat struct {
	openai.ChatCompletionRequest
	IgnoreEOS bool `json:"ignore_eos"`
	MinTokens int  `json:"min_tokens"`
}

// parseOpenAI is parse's work done with go-openai's types (no prefix cache).
func (s *Server) parseOpenAI(body []byte, chat bool) (request, error) {
	req := request{maxTokens: 16}
	var include *openai.StreamOptions
	if chat {
		var r openaiChat
		if err := json.Unmarshal(body, &r); err != nil {
			return req, err
		}
		req.model, req.stream, req.ignoreEOS, req.minTokens, include = r.Model, r.Stream, r.IgnoreEOS, r.MinTokens, r.StreamOptions
		for _, m := range r.Messages {
			req.promptTokens += countWords([]byte(m.Content))
			for _, p := range m.MultiContent {
				switch p.Type {
				case openai.ChatMessagePartTypeText:
					req.promptTokens += countWords([]byte(p.Text))
				case openai.ChatMessagePartTypeImageURL:
					req.images++
					req.promptTokens += s.cfg.TokensPerImage
				}
			}
		}
		if r.MaxCompletionTokens > 0 {
			req.maxTokens = r.MaxCompletionTokens
		} else if r.MaxTokens > 0 {
			req.maxTokens = r.MaxTokens
		}
	} else {
		var r openaiCompletion
		if err := json.Unmarshal(body, &r); err != nil {
			return req, err
		}
		req.model, req.stream, req.ignoreEOS, req.minTokens, include = r.Model, r.Stream, r.IgnoreEOS, r.MinTokens, r.StreamOptions
		switch p := r.Prompt.(type) {
		case string:
			req.promptTokens = countWords([]byte(p))
		case []any:
			req.promptTokens = len(p)
		default:
			return req, errors.New("prompt: a string or a list of token ids is required")
		}
		if r.MaxTokens > 0 {
			req.maxTokens = r.MaxTokens
		}
	}
	if req.model == "" {
		req.model = s.cfg.Models[0]
	}
	req.usage = !req.stream || include != nil && include.IncludeUsage
	return req, nil
}

// benchBodies are the request bodies the tool sends most: a 1,024-token
// prompt as token ids (completions) and as text (chat).
func benchBodies() map[string][]byte {
	ids := make([]string, 1024)
	words := make([]string, 1024)
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i*37%30000)
		words[i] = "word"
	}
	tail := `,"max_tokens":128,"min_tokens":128,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"temperature":0}`
	return map[string][]byte{
		"completion-ids": []byte(`{"model":"m","prompt":[` + strings.Join(ids, ",") + `]` + tail),
		"chat-text":      []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Join(words, " ") + `"}]` + tail),
	}
}

func BenchmarkParseRequest(b *testing.B) {
	s, err := New(Config{Models: []string{"m"}, TokensPerImage: 64})
	if err != nil {
		b.Fatal(err)
	}
	for name, body := range benchBodies() {
		chat := strings.HasPrefix(name, "chat")
		want, err := s.parse(body, chat)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := s.parseOpenAI(body, chat); err != nil || got.promptTokens != want.promptTokens || got.maxTokens != want.maxTokens ||
			got.minTokens != want.minTokens || got.usage != want.usage || got.ignoreEOS != want.ignoreEOS || got.model != want.model {
			b.Fatalf("%s: go-openai reading %+v (%v), fastjson %+v: the comparison is not of the same work", name, got, err, want)
		}
		b.Run(name+"/fastjson", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s.parse(body, chat)
			}
		})
		b.Run(name+"/go-openai", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s.parseOpenAI(body, chat)
			}
		})
	}
}
