package api_test

import (
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// A --backend name is looked up once; everything after reads the row.
func ExampleLookup() {
	k, ok := api.Lookup("openai-responses")
	fmt.Println(ok, k.Path, k.Measure, k.Has(api.Chains), k.Has(api.Batch))
	fmt.Println("tools:", api.WithCaps(api.Tools))
	// Output:
	// true /v1/responses tokens true false
	// tools: openai-chat or openai-responses or anthropic-messages
}
