package client_test

import (
	"context"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

// One streamed completion against the built-in server, started on a free
// loopback port: the client sends the request and records what came back
// (status, usage, the chunks' times).
func ExampleClient_Do() {
	_, port, stop, err := mockserver.ServeNew(mockserver.Config{Models: []string{"mock-model"}}) // 127.0.0.1 only
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	vllm, _ := api.Lookup("vllm") // --backend vllm: /v1/completions
	c, err := client.New(client.Config{
		BaseURL: fmt.Sprintf("http://127.0.0.1:%d", port),
		API:     vllm, Model: "mock-model", Stream: true, IgnoreEOS: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	res := &client.Result{}
	res.Reset()
	c.Do(context.Background(), &client.Request{MaxTokens: 4, Prompt: []byte(`[1, 2, 3, 4, 5, 6, 7, 8]`)}, res)
	fmt.Printf("ok %v, status %d, prompt tokens %d, completion tokens %d, %d chunks with text\n",
		res.OK(), res.Status, res.PromptTokens, res.CompletionTokens, len(res.TokenTimes))
	// Output:
	// ok true, status 200, prompt tokens 8, completion tokens 4, 4 chunks with text
}
