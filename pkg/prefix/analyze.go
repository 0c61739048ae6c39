package prefix

import (
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultMaxDistinct bounds the distinct blocks an analysis (or a
// synthesis) keeps: each costs about 60 bytes, plus 55 in every LRU cache
// that holds it.
const DefaultMaxDistinct = 50_000_000

// ErrTooManyBlocks is returned when a trace has more distinct blocks than
// the analysis may keep.
type ErrTooManyBlocks struct{ Max int }

func (e ErrTooManyBlocks) Error() string {
	return fmt.Sprintf("more than %d distinct blocks: the analysis keeps one entry a distinct block (about 60 bytes, and 55 more in each --cache-blocks cache holding it); raise --max-distinct-blocks if the memory is there", e.Max)
}

// node is one distinct block: a node of the prefix tree.
type node struct {
	children int32
	depth    int32
	uses     int32 // requests that used it (saturating)
	lastReq  int32 // the last request that used it (for uses)
}

// Analyzer accumulates a prefix trace's figures one request at a time, in
// time order. Its memory grows with the distinct blocks, not the requests.
type Analyzer struct {
	blockSize   int
	maxDistinct int
	index       map[uint64]int32
	nodes       []node
	lastIDs     map[uint64]struct{} // the last block of every request: distinct prompts
	lrus        []*lru

	requests, withBlocks  int
	blocks, hits          int64
	tokens, hitTokens     int64
	first, last           float64
	isl, osl, ctx, reqHit dist
}

// dist is a distribution: an HdrHistogram for the quantiles (3 significant
// digits) and the exact minimum, maximum and mean.
type dist struct {
	h        *hdrhistogram.Histogram
	min, max int64
	sum      float64
}

func newDist(highest int64) dist { return dist{h: hdrhistogram.New(0, highest, 3)} }

func (d *dist) add(v int64) {
	if d.h.TotalCount() == 0 || v < d.min {
		d.min = v
	}
	d.max = max(d.max, v)
	d.sum += float64(v)
	_ = d.h.RecordValue(v)
}

// NewAnalyzer returns an analyzer of blocks of blockSize tokens (0: the
// first request's BlockSize), with one LRU cache of each size in
// cacheBlocks (in blocks); maxDistinct ≤ 0 is DefaultMaxDistinct.
func NewAnalyzer(blockSize int, cacheBlocks []int, maxDistinct int) *Analyzer {
	if maxDistinct <= 0 {
		maxDistinct = DefaultMaxDistinct
	}
	a := &Analyzer{blockSize: blockSize, maxDistinct: maxDistinct, index: map[uint64]int32{}, lastIDs: map[uint64]struct{}{},
		isl: newDist(1 << 32), osl: newDist(1 << 32), ctx: newDist(1 << 33), reqHit: newDist(10000)}
	for _, c := range cacheBlocks {
		a.lrus = append(a.lrus, newLRU(c))
	}
	return a
}

// Add accounts for one request (requests come in time order).
func (a *Analyzer) Add(q *Request) error {
	if a.requests == 0 {
		a.first = q.T
		if a.blockSize <= 0 {
			a.blockSize = max(q.BlockSize, 1)
		}
	}
	a.first, a.last = min(a.first, q.T), max(a.last, q.T)
	reqIdx := int32(a.requests)
	a.requests++
	a.isl.add(int64(q.In))
	a.osl.add(int64(q.Out))
	a.ctx.add(int64(q.In) + int64(q.Out))
	if len(q.Blocks) == 0 {
		return nil
	}
	a.withBlocks++
	a.lastIDs[q.Blocks[len(q.Blocks)-1]] = struct{}{}
	var hits int64
	parent := int32(-1)
	for k, id := range q.Blocks {
		tok := int64(min(a.blockSize, q.In-k*a.blockSize))
		if k == len(q.Blocks)-1 && tok <= 0 {
			tok = 0
		}
		a.tokens += max(tok, 0)
		i, seen := a.index[id]
		if seen {
			hits++
			a.hitTokens += max(tok, 0)
			n := &a.nodes[i]
			if n.lastReq != reqIdx && n.uses < math.MaxInt32 {
				n.uses++
			}
			n.lastReq = reqIdx
		} else {
			if len(a.nodes) >= a.maxDistinct {
				return ErrTooManyBlocks{a.maxDistinct}
			}
			i = int32(len(a.nodes))
			a.index[id] = i
			a.nodes = append(a.nodes, node{depth: int32(k + 1), uses: 1, lastReq: reqIdx})
			if parent >= 0 {
				a.nodes[parent].children++
			}
		}
		parent = i
	}
	// Tokens past the last block (a trace may name fewer blocks than the
	// input covers) are never cached.
	if rest := int64(q.In - len(q.Blocks)*a.blockSize); rest > 0 {
		a.tokens += rest
	}
	a.blocks += int64(len(q.Blocks))
	a.hits += hits
	a.reqHit.add(int64(math.Round(10000 * float64(hits) / float64(len(q.Blocks)))))
	for _, c := range a.lrus {
		c.request(q.Blocks)
	}
	return nil
}

// Quantiles are a distribution's summary.
type Quantiles struct {
	Min  float64 `json:"min"`
	P25  float64 `json:"p25"`
	P50  float64 `json:"median"`
	P75  float64 `json:"p75"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// quantiles summarizes d, every value divided by div; the quantiles are
// within 0.1 % (HdrHistogram), never above the exact maximum.
func quantiles(d dist, div float64) Quantiles {
	n := d.h.TotalCount()
	if n == 0 {
		return Quantiles{}
	}
	q := func(p float64) float64 { return float64(min(d.h.ValueAtQuantile(p), d.max)) / div }
	return Quantiles{Min: float64(d.min) / div, P25: q(25), P50: q(50), P75: q(75), P90: q(90), P99: q(99),
		Max: float64(d.max) / div, Mean: d.sum / float64(n) / div}
}

// Tree is the prefix tree's shape: a node a distinct block, its parent the
// block before it in the requests that use it.
type Tree struct {
	Nodes  int `json:"nodes"`
	Roots  int `json:"roots"`
	Leaves int `json:"leaves"`
	// MaxDepth is the longest path in blocks; MeanLeafDepth the mean
	// depth of the leaves.
	MaxDepth      int     `json:"max_depth"`
	MeanLeafDepth float64 `json:"mean_leaf_depth"`
	// Internal nodes (with children), their mean and largest number of
	// children.
	Internal      int     `json:"internal_nodes"`
	MeanBranching float64 `json:"mean_branching"`
	MaxBranching  int     `json:"max_branching"`
}

// CacheRun is an LRU cache's figures.
type CacheRun struct {
	Blocks int `json:"cache_blocks"`
	Tokens int `json:"cache_tokens"`
	// Hits are blocks served from the cache: a block counts when it and
	// every block before it in its request were resident, as a prefix cache
	// serves them.
	Hits     int64   `json:"hits"`
	HitRate  float64 `json:"hit_rate"`
	Evicted  int64   `json:"evictions"`
	Resident int     `json:"resident_at_end"`
}

// Report is what Analyze finds.
type Report struct {
	BlockSize int `json:"block_size"`
	Requests  int `json:"requests"`
	// WithBlocks counts the requests that name at least one block.
	WithBlocks int     `json:"requests_with_blocks"`
	SpanS      float64 `json:"span_s"`
	Blocks     int64   `json:"blocks"`
	// Distinct blocks: the cold misses no cache avoids.
	Distinct int `json:"distinct_blocks"`
	// InfiniteHitRate is the share of blocks already seen by an earlier
	// request (in time order): what a cache that never evicts serves.
	// TokenHitRate is the same in prompt tokens (a partial last block
	// counts its tokens; tokens past the named blocks never hit).
	InfiniteHits    int64   `json:"infinite_cache_hits"`
	InfiniteHitRate float64 `json:"infinite_cache_hit_rate"`
	TokenHitRate    float64 `json:"infinite_cache_token_hit_rate"`
	// UniquePrefixes is the number of distinct prompts by their blocks
	// (distinct last block ids: the ids are chained); PrefixReuseRatio the
	// share of distinct blocks used by more than one request.
	UniquePrefixes   int       `json:"unique_prefixes"`
	PrefixReuseRatio float64   `json:"prefix_reuse_ratio"`
	ISL              Quantiles `json:"isl"`
	OSL              Quantiles `json:"osl"`
	Context          Quantiles `json:"context"`
	// RequestHitRate is the distribution of each request's share of
	// blocks already seen.
	RequestHitRate Quantiles  `json:"request_hit_rate"`
	Tree           Tree       `json:"tree"`
	LRU            []CacheRun `json:"lru,omitempty"`
}

// Report returns the figures so far.
func (a *Analyzer) Report() Report {
	r := Report{BlockSize: a.blockSize, Requests: a.requests, WithBlocks: a.withBlocks, Blocks: a.blocks, Distinct: len(a.nodes),
		InfiniteHits: a.hits, UniquePrefixes: len(a.lastIDs),
		ISL: quantiles(a.isl, 1), OSL: quantiles(a.osl, 1), Context: quantiles(a.ctx, 1), RequestHitRate: quantiles(a.reqHit, 10000)}
	if a.requests > 0 {
		r.SpanS = a.last - a.first
	}
	if a.blocks > 0 {
		r.InfiniteHitRate = float64(a.hits) / float64(a.blocks)
	}
	if a.tokens > 0 {
		r.TokenHitRate = float64(a.hitTokens) / float64(a.tokens)
	}
	var reused, leafDepth, children int64
	for _, n := range a.nodes {
		if n.uses > 1 {
			reused++
		}
		r.Tree.MaxDepth = max(r.Tree.MaxDepth, int(n.depth))
		if n.depth == 1 {
			r.Tree.Roots++
		}
		if n.children == 0 {
			r.Tree.Leaves++
			leafDepth += int64(n.depth)
		} else {
			r.Tree.Internal++
			children += int64(n.children)
			r.Tree.MaxBranching = max(r.Tree.MaxBranching, int(n.children))
		}
	}
	r.Tree.Nodes = len(a.nodes)
	if len(a.nodes) > 0 {
		r.PrefixReuseRatio = float64(reused) / float64(len(a.nodes))
	}
	if r.Tree.Leaves > 0 {
		r.Tree.MeanLeafDepth = float64(leafDepth) / float64(r.Tree.Leaves)
	}
	if r.Tree.Internal > 0 {
		r.Tree.MeanBranching = float64(children) / float64(r.Tree.Internal)
	}
	for _, c := range a.lrus {
		run := CacheRun{Blocks: c.cap, Tokens: c.cap * a.blockSize, Hits: c.hits, Evicted: c.evicted, Resident: len(c.where)}
		if a.blocks > 0 {
			run.HitRate = float64(c.hits) / float64(a.blocks)
		}
		r.LRU = append(r.LRU, run)
	}
	return r
}

// lru is a cache of cap blocks evicting the least recently used: an
// intrusive doubly linked list over slots, most recent at head.
type lru struct {
	cap           int
	where         map[uint64]int32
	ids           []uint64
	prev, next    []int32
	head, tail    int32
	hits, evicted int64
}

func newLRU(capacity int) *lru {
	return &lru{cap: max(capacity, 1), where: map[uint64]int32{}, head: -1, tail: -1}
}

func (c *lru) unlink(i int32) {
	p, n := c.prev[i], c.next[i]
	if p >= 0 {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.prev[n] = p
	} else {
		c.tail = p
	}
}

func (c *lru) pushFront(i int32) {
	c.prev[i], c.next[i] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}

// request looks the blocks up in order and makes them the most recent; the
// hits are the leading run of resident blocks.
func (c *lru) request(blocks []uint64) {
	leading := true
	for _, id := range blocks {
		i, ok := c.where[id]
		if ok {
			if leading {
				c.hits++
			}
			c.unlink(i)
			c.pushFront(i)
			continue
		}
		leading = false
		if len(c.ids) < c.cap {
			i = int32(len(c.ids))
			c.ids = append(c.ids, id)
			c.prev = append(c.prev, -1)
			c.next = append(c.next, -1)
		} else {
			i = c.tail
			c.unlink(i)
			delete(c.where, c.ids[i])
			c.evicted++
			c.ids[i] = id
		}
		c.where[id] = i
		c.pushFront(i)
	}
}
