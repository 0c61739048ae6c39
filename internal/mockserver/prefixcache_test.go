package mockserver

import (
	"fmt"
	"strings"
	"testing"
)

func TestPrefixCacheCounts(t *testing.T) {
	_, url := start(t, Config{PrefixCache: PrefixCacheConfig{Blocks: 1000}})
	ids := func(from, n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(from + i)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	body := func(prompt string) string {
		return `{"model":"m","prompt":` + prompt + `,"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
	}
	cached := func(prompt string) int {
		r := post(t, url, "/v1/completions", body(prompt))
		d, _ := r.usage["prompt_tokens_details"].(map[string]any)
		v, _ := d["cached_tokens"].(float64)
		return int(v)
	}
	for _, c := range []struct {
		name   string
		prompt string
		want   int
	}{
		{"cold", ids(0, 100), 0},
		{"same prompt: its 6 full blocks", ids(0, 100), 96},
		{"longer: every full block of the first", ids(0, 120), 96},
		{"aligned and fully cached: recompute the last block", ids(0, 112), 96},
		{"shorter: its full blocks", ids(0, 40), 32},
		{"words: cold", `"a b c d e f g h i j k l m n o p q r s t"`, 0},
		{"same words", `"a b c d e f g h i j k l m n o p q r s t"`, 16},
		{"same words, other spacing", `"a  b c d e f g h i j k l m n o p\nq r s t u"`, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cached(c.prompt); got != c.want {
				t.Errorf("cached %d, want %d", got, c.want)
			}
		})
	}
}

func TestPrefixCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newPrefixCache(PrefixCacheConfig{Blocks: 3})
	if got := c.admit([]uint64{1, 2, 3}, 100); got != 0 {
		t.Fatalf("cold: %d", got)
	}
	c.admit([]uint64{1}, 100)                           // 1 is now the most recent: LRU order 2, 3, 1
	c.admit([]uint64{9}, 100)                           // evicts 2
	if got := c.admit([]uint64{1, 2}, 100); got != 16 { // 1 hit, 2 evicted (and evicts 3)
		t.Errorf("after eviction: %d cached, want 16", got)
	}
	if st := c.stats; st.Evicted != 2 || c.lru.Len() != 3 || st.Requests != 4 {
		t.Errorf("stats %+v, %d blocks", st, c.lru.Len())
	}
	if newPrefixCache(PrefixCacheConfig{}) != nil {
		t.Error("a zero capacity must disable the cache")
	}
}

func TestPrefixCacheChatImages(t *testing.T) {
	_, url := start(t, Config{TokensPerImage: 32, PrefixCache: PrefixCacheConfig{Blocks: 1000}})
	msg := func(img string) string {
		return `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a b c d e f g h i j k l m n o p"},{"type":"image_url","image_url":{"url":"` + img + `"}}]}]}`
	}
	get := func(body string) int {
		r := post(t, url, "/v1/chat/completions", body)
		d, _ := r.usage["prompt_tokens_details"].(map[string]any)
		v, _ := d["cached_tokens"].(float64)
		return int(v)
	}
	get(msg("data:image/png;base64,AAAA"))
	if got := get(msg("data:image/png;base64,AAAA")); got != 32 { // 48 tokens, the last block recomputed
		t.Errorf("same image: %d cached, want 32", got)
	}
	if got := get(msg("data:image/png;base64,BBBB")); got != 16 { // the text block only
		t.Errorf("other image: %d cached, want 16", got)
	}
}

// TestPrefixCacheKeepsGeneratedBlocks: the full blocks of an answer are
// cached with the prompt's, so a next turn that sends the prompt, the
// answer as received and a new message finds both cached (within the last
// partial block), as a conversation does on vLLM.
func TestPrefixCacheKeepsGeneratedBlocks(t *testing.T) {
	_, url := start(t, Config{PrefixCache: PrefixCacheConfig{Blocks: 1000}})
	words := func(w string, n int) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	cached := func(prompt string, maxTokens int) int {
		r := post(t, url, "/v1/completions", `{"model":"m","prompt":"`+prompt+`","max_tokens":`+fmt.Sprint(maxTokens)+`,"ignore_eos":true,"min_tokens":`+fmt.Sprint(maxTokens)+`}`)
		d, _ := r.usage["prompt_tokens_details"].(map[string]any)
		v, _ := d["cached_tokens"].(float64)
		return int(v)
	}
	first := words("alpha", 40) // 40 tokens, then 30 generated: 70, 4 full blocks
	if got := cached(first, 30); got != 0 {
		t.Fatalf("cold: %d", got)
	}
	next := first + strings.Repeat(tokenText, 30) + " " + words("beta", 20)
	if got := cached(next, 1); got != 64 {
		t.Errorf("next turn: %d cached, want the 64 tokens of the previous prompt and answer's full blocks", got)
	}
	// Without the answer the previous turn's generated blocks do not match.
	other := first + " " + words("beta", 50)
	if got := cached(other, 1); got != 32 {
		t.Errorf("other continuation: %d cached, want only the prompt's 32", got)
	}
}
