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
	if got := WithCaps(Messages | Tools); got != "openai-chat or openai-responses" {
		t.Errorf("WithCaps(Messages|Tools) = %q", got)
	}
	if !Chat.InputImages() || !VLLM.InputImages() || Embeddings.InputImages() {
		t.Error("InputImages: chat and completions (its chat twin) carry images, embeddings do not")
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
