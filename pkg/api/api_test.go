package api

import (
	"strings"
	"testing"
)

// TestTable: every row is complete and reachable by its name alone, the
// help and the list of names name every row, and capabilities read as
// their sets.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range All() {
		if seen[k.Name] {
			t.Errorf("kind %q twice in the table", k.Name)
		}
		seen[k.Name] = true
		if got, ok := Lookup(k.Name); !ok || got != k {
			t.Errorf("Lookup(%q) = %v, %v", k.Name, got, ok)
		}
		if !strings.HasPrefix(k.Path, "/") || k.Help == "" {
			t.Errorf("kind %q: incomplete row (path %q, help %q)", k.Name, k.Path, k.Help)
		}
		if k.Has(GeneratesImages) && k.Measure.Tokens() {
			t.Errorf("kind %q generates images but is measured in tokens", k.Name)
		}
		if k.Has(Batch) != k.Measure.Batches() {
			t.Errorf("kind %q: batches %v, but measures %v", k.Name, k.Has(Batch), k.Measure)
		}
		if !strings.Contains(Names(), k.Name) || !strings.Contains(Help(), k.Name) || !strings.Contains(Help(), k.Path) {
			t.Errorf("kind %q missing from %q or %q", k.Name, Names(), Help())
		}
		if ParseMeasure(k.Measure.String()) != k.Measure {
			t.Errorf("kind %q: measure %v does not read back", k.Name, k.Measure)
		}
	}
	if _, ok := Lookup("openai-imagez"); ok {
		t.Error("an unknown name was found")
	}
	if got := WithCaps(Chains); got != "openai-responses" {
		t.Errorf("WithCaps(Chains) = %q", got)
	}
	if got := WithCaps(Messages | Tools); got != "openai-chat or openai-responses or anthropic-messages" {
		t.Errorf("WithCaps(Messages|Tools) = %q", got)
	}
	if !Chat.InputImages() || !VLLM.InputImages() || Embeddings.InputImages() {
		t.Error("InputImages: chat and completions (its chat twin) carry images, embeddings do not")
	}
	if Anthropic.InputImages() || !Anthropic.Has(Messages|Sessions|Reasoning|Tools) || Anthropic.Has(HistoryItems) {
		t.Error("anthropic-messages: messages, sessions, thinking and tools in content blocks; no chat image parts, no input items")
	}
	if SGLang.Has(TextPrompts) || !SGLang.Has(Sessions) || !KServe.Has(TextPrompts|Sessions) {
		t.Error("sglang-generate takes token ids, kserve-generate text only; both hold a conversation as completions do")
	}
	var none *Kind
	if none.Has(Messages) || none.String() != "" {
		t.Error("a nil kind has no capability and no name")
	}
	if !Responses.Has(Messages|Chains) || Responses.Has(Messages|Batch) {
		t.Error("Has: every capability of the set, not any")
	}
}

// TestHelpJoinsRows: rows with the same help share one line of --backend's
// help, in the table's order.
func TestHelpJoinsRows(t *testing.T) {
	if !strings.HasPrefix(Help(), "vllm or openai: completions (/v1/completions); openai-chat: ") {
		t.Errorf("help %q", Help())
	}
	if got, want := Names(), "vllm, openai, "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " or openai-transcriptions") {
		t.Errorf("names %q", got)
	}
}

// TestExpandPath: the model's name replaces the path's placeholder as one
// escaped segment; a path without the placeholder is left as it is.
func TestExpandPath(t *testing.T) {
	for _, c := range []struct{ path, model, want string }{
		{KServe.Path, "llama", "/v2/models/llama/generate"},
		{KServe.Path, "org/model x", "/v2/models/org%2Fmodel%20x/generate"},
		{"/gw/v2/models/{model}/versions/1/generate", "m", "/gw/v2/models/m/versions/1/generate"},
		{Chat.Path, "llama", Chat.Path},
	} {
		if got := ExpandPath(c.path, c.model); got != c.want {
			t.Errorf("ExpandPath(%q, %q) = %q, want %q", c.path, c.model, got, c.want)
		}
	}
}

// OrList names one item, two, or more as a message does.
func TestOrList(t *testing.T) {
	id := func(s string) string { return s }
	for n, want := range []string{"", "a", "a or b", "a, b or c"} {
		if got := OrList([]string{"a", "b", "c"}[:n], id); got != want {
			t.Errorf("%d items: %q, want %q", n, got, want)
		}
	}
}
