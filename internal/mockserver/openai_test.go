package mockserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestOpenAIClientReadsEveryAnswer checks the server's wire format with a
// client written by others (go-openai) rather than with our own: every
// endpoint the tool uses, streamed and not, and the error format. The
// built-in server is the target of the tool's tests; if it drifted from the
// OpenAI schema they would pass against a server no real client could use.
func TestOpenAIClientReadsEveryAnswer(t *testing.T) {
	_, url := start(t, Config{Models: []string{"a", "b"}, TTFT: time.Millisecond, ITL: time.Millisecond})
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = url + "/v1"
	c := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	t.Run("models", func(t *testing.T) {
		list, err := c.ListModels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range list.Models {
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, []string{"a", "b"}) {
			t.Errorf("models %v, want [a b]", ids)
		}
	})

	t.Run("completion", func(t *testing.T) {
		r, err := c.CreateCompletion(ctx, openai.CompletionRequest{Model: "b", Prompt: "one two three", MaxTokens: 5})
		if err != nil {
			t.Fatal(err)
		}
		if r.Model != "b" || len(r.Choices) != 1 || r.Choices[0].Text == "" || r.Choices[0].FinishReason == "" ||
			r.Usage.PromptTokens != 3 || r.Usage.CompletionTokens < 1 || r.Usage.CompletionTokens > 5 {
			t.Errorf("response %+v: want model b, one choice with text and a finish reason, 3 prompt tokens, 1–5 completion tokens", r)
		}
	})

	t.Run("completion stream", func(t *testing.T) {
		st, err := c.CreateCompletionStream(ctx, openai.CompletionRequest{Model: "a", Prompt: "one two", MaxTokens: 4,
			Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var text strings.Builder
		var usage *openai.Usage
		recvAll(t, st.Recv, func(chunk openai.CompletionResponse) {
			for _, ch := range chunk.Choices {
				text.WriteString(ch.Text)
			}
			if chunk.Usage != nil {
				usage = chunk.Usage
			}
		})
		if text.Len() == 0 || usage == nil || usage.PromptTokens != 2 || usage.CompletionTokens < 1 || usage.CompletionTokens > 4 {
			t.Errorf("text %q, usage %+v: want text and the usage chunk (2 prompt tokens, 1–4 completion tokens)", text.String(), usage)
		}
	})

	t.Run("chat", func(t *testing.T) {
		r, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "a", MaxCompletionTokens: 3,
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello there world"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) != 1 || r.Choices[0].Message.Role != openai.ChatMessageRoleAssistant || r.Choices[0].Message.Content == "" ||
			r.Usage.PromptTokens != 3 || r.Usage.CompletionTokens < 1 || r.Usage.CompletionTokens > 3 {
			t.Errorf("response %+v: want one assistant message with content, 3 prompt tokens, 1–3 completion tokens", r)
		}
	})

	t.Run("chat stream with an image", func(t *testing.T) {
		st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: "a", MaxTokens: 3, Stream: true,
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
				{Type: openai.ChatMessagePartTypeText, Text: "what is this"},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA"}},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var role, finish string
		var content strings.Builder
		recvAll(t, st.Recv, func(chunk openai.ChatCompletionStreamResponse) {
			for _, ch := range chunk.Choices {
				role += ch.Delta.Role
				content.WriteString(ch.Delta.Content)
				if ch.FinishReason != "" {
					finish = string(ch.FinishReason)
				}
			}
		})
		if role != openai.ChatMessageRoleAssistant || content.Len() == 0 || finish == "" {
			t.Errorf("role %q, content %q, finish %q: want the assistant's role once, content and a finish reason", role, content.String(), finish)
		}
	})

	t.Run("image", func(t *testing.T) {
		r, err := c.CreateImage(ctx, openai.ImageRequest{Model: "a", Prompt: "a cat", N: 2, Size: openai.CreateImageSize256x256,
			ResponseFormat: openai.CreateImageResponseFormatB64JSON})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Data) != 2 || r.Data[0].B64JSON == "" || r.Data[1].B64JSON == "" {
			t.Errorf("%d images (first %.20q): want 2, base64-encoded", len(r.Data), r.Data)
		}
	})

	t.Run("error", func(t *testing.T) {
		// The server answers errors as vLLM does, a top-level object
		// {"object":"error","message",…,"code"}, not OpenAI's
		// {"error":{…}}: go-openai reads it as a request error with the
		// status and the body, not as an APIError.
		_, err := c.CreateCompletion(ctx, openai.CompletionRequest{Model: "nope", Prompt: "x", MaxTokens: 1})
		var reqErr *openai.RequestError
		if !errors.As(err, &reqErr) || reqErr.HTTPStatusCode != http.StatusNotFound || !strings.Contains(string(reqErr.Body), "does not exist") {
			t.Errorf("error %v (%T): want a request error, 404, whose body says the model does not exist", err, err)
		}
	})
}

// recvAll reads a stream to its end, handing every chunk to on; an error
// before the end fails the test.
func recvAll[T any](t *testing.T, recv func() (T, error), on func(T)) {
	t.Helper()
	for {
		chunk, err := recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		on(chunk)
	}
}
