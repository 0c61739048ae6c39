package mockserver

import (
	"container/list"
	"sync"

	"github.com/valyala/fastjson"
)

// PrefixCacheConfig enables a vLLM-like automatic prefix cache: prompts are
// cut into blocks of BlockTokens tokens, each full block is named by a hash
// chained over every token before it (and the model), and a request's
// leading blocks found in the cache are its cached tokens
// (usage.prompt_tokens_details.cached_tokens); they are left out of the
// prefill time. As in vLLM, at least the last prompt token is always
// computed, so a fully cached, block-aligned prompt recomputes its last
// block. The full blocks of the generated tokens are cached too, as vLLM
// does, so a conversation's next turn (whose prompt holds the answer)
// finds the whole previous turn cached. Memory is bounded: the least
// recently used blocks are evicted.
type PrefixCacheConfig struct {
	// Blocks is the capacity in blocks; 0 disables the cache.
	Blocks int
	// BlockTokens is the block size in tokens (default 16, vLLM's).
	BlockTokens int
}

// DefaultPrefixCacheBlocks is the mock-server's default capacity: 2^18
// blocks of 16 tokens, 4 M tokens, the KV cache of a large GPU.
const DefaultPrefixCacheBlocks = 1 << 18

// PrefixCacheStats counts the cache's work.
type PrefixCacheStats struct {
	Requests     int64 // requests looked up
	PromptTokens int64 // their prompt tokens
	CachedTokens int64 // of which served from the cache
	Blocks       int   // blocks held now
	Evicted      int64 // blocks evicted so far
}

// prefixCache is an LRU set of chained block hashes.
type prefixCache struct {
	blockTokens int
	capacity    int

	mu    sync.Mutex
	index map[uint64]*list.Element // value: the block hash
	lru   list.List                // front: most recently used
	stats PrefixCacheStats
}

func newPrefixCache(c PrefixCacheConfig) *prefixCache {
	if c.Blocks <= 0 {
		return nil
	}
	bt := c.BlockTokens
	if bt <= 0 {
		bt = 16
	}
	return &prefixCache{blockTokens: bt, capacity: c.Blocks, index: make(map[uint64]*list.Element, min(c.Blocks, 1<<16))}
}

// admit looks a request's full blocks up, counts its cached tokens, and
// inserts (or refreshes) every block. It returns the cached tokens.
func (c *prefixCache) admit(blocks []uint64, promptTokens int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for hit < len(blocks) {
		if _, ok := c.index[blocks[hit]]; !ok {
			break
		}
		hit++
	}
	// vLLM computes at least one prompt token.
	for hit > 0 && hit*c.blockTokens >= promptTokens {
		hit--
	}
	c.insertLocked(blocks)
	cached := hit * c.blockTokens
	c.stats.Requests++
	c.stats.PromptTokens += int64(promptTokens)
	c.stats.CachedTokens += int64(cached)
	return cached
}

// keep inserts (or refreshes) the blocks of a request's generated tokens:
// as in vLLM, a full block of output is cached like a prompt block, so the
// next turn of a conversation, whose prompt holds this answer, finds it.
func (c *prefixCache) keep(blocks []uint64) {
	if len(blocks) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insertLocked(blocks)
}

// insertLocked inserts or refreshes blocks, evicting the least recently
// used beyond the capacity. c.mu must be held.
func (c *prefixCache) insertLocked(blocks []uint64) {
	for _, h := range blocks {
		if e, ok := c.index[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.index[h] = c.lru.PushFront(h)
		for c.lru.Len() > c.capacity {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.index, old.Value.(uint64))
			c.stats.Evicted++
		}
	}
}

// generated continues the prompt's hashes over out generated tokens (each
// the word the server sends) and returns the full blocks they complete.
func (b *blockHasher) generated(out int) []uint64 {
	n0 := len(b.blocks)
	for range out {
		b.words([]byte(tokenText))
	}
	return b.blocks[n0:]
}

// PrefixCacheStats returns the prefix cache's counters (zero when it is
// disabled).
func (s *Server) PrefixCacheStats() PrefixCacheStats {
	c := s.prefix
	if c == nil {
		return PrefixCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Blocks = c.lru.Len()
	return st
}

// blockHasher names a prompt's full blocks: each hash covers the model and
// every token up to the end of its block.
type blockHasher struct {
	per    int
	h      uint64
	n      int
	blocks []uint64
}

func (b *blockHasher) reset(model string, per int) {
	b.per, b.n, b.blocks = per, 0, b.blocks[:0]
	b.h = fmix(fnv1a(model))
}

func (b *blockHasher) token(t uint64) {
	b.h = (b.h ^ fmix(t)) * 0x9e3779b97f4a7c15
	b.n++
	if b.n%b.per == 0 {
		b.h = fmix(b.h)
		b.blocks = append(b.blocks, b.h)
	}
}

// words adds the whitespace-separated words of s (one token each, as
// countWords counts them).
func (b *blockHasher) words(s []byte) {
	var h uint64
	in := false
	for _, c := range s {
		sp := isSpace(c)
		switch {
		case !sp && !in:
			h = (0xcbf29ce484222325 ^ uint64(c)) * 0x100000001b3
		case !sp:
			h = (h ^ uint64(c)) * 0x100000001b3
		case in:
			b.token(h)
		}
		in = !sp
	}
	if in {
		b.token(h)
	}
}

// image adds an image's n tokens, drawn from its URL's hash: the same
// image makes the same blocks.
func (b *blockHasher) image(url []byte, n int) {
	h := fnv1a(url)
	for k := range n {
		b.token(h + uint64(k))
	}
}

// fnv1a returns the 64-bit FNV-1a hash of s.
func fnv1a[S string | []byte](s S) uint64 {
	var h uint64 = 0xcbf29ce484222325
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 0x100000001b3
	}
	return h
}

func fmix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// prefixBlocks returns the chained hashes of the full blocks of a parsed
// request body's prompt, in the order parse counts its tokens: token ids
// or words of a completion; for chat, the words of every message's text
// and, per image part, TokensPerImage tokens derived from the image.
func (s *Server) prefixBlocks(v *fastjson.Value, chat bool, model string) *blockHasher {
	b := new(blockHasher)
	b.reset(model, s.prefix.blockTokens)
	if !chat {
		pr := v.Get("prompt")
		switch pr.Type() {
		case fastjson.TypeString:
			b.words(pr.GetStringBytes())
		case fastjson.TypeArray:
			items, _ := pr.Array()
			for _, it := range items {
				n, _ := it.Uint64()
				b.token(n)
			}
		}
		return b
	}
	for _, m := range v.GetArray("messages") {
		c := m.Get("content")
		if c == nil {
			continue
		}
		switch c.Type() {
		case fastjson.TypeString:
			b.words(c.GetStringBytes())
		case fastjson.TypeArray:
			parts, _ := c.Array()
			for _, part := range parts {
				switch string(part.GetStringBytes("type")) {
				case "text":
					b.words(part.GetStringBytes("text"))
				case "image_url", "input_image":
					url := imageURL(part)
					b.image(url, s.imageTokens(url))
				}
			}
		}
	}
	return b
}
