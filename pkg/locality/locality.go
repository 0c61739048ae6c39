// Package locality answers how many adapter (or model) loads a cache of N
// slots needs for a sequence of requests, under LRU, LFU or the optimal
// (Belady) policy: the question behind vLLM's --max-loras.
package locality

import (
	"container/heap"
	"fmt"
	"strings"
)

// Policy is a cache's eviction policy.
type Policy string

// Policies.
const (
	// LRU evicts the item used least recently.
	LRU Policy = "lru"
	// LFU evicts the item used least often since it was loaded; ties go to
	// the least recently used.
	LFU Policy = "lfu"
	// OPT evicts the item whose next use is farthest away (Belady's
	// optimal policy: the fewest loads any policy can achieve).
	OPT Policy = "opt"
)

// Policies lists every policy, in report order.
var Policies = []Policy{LRU, LFU, OPT}

// ParsePolicy parses one policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case LRU, LFU, OPT:
		return p, nil
	case "belady", "min":
		return OPT, nil
	}
	return "", fmt.Errorf("cache policy %q: want lru, lfu or opt", s)
}

// Counts is what a cache saw.
type Counts struct {
	// Accesses is the number of item uses (a request using k adapters
	// counts k); Loads those that found the item absent (cold loads
	// included); Hits the others.
	Accesses int64 `json:"accesses"`
	Loads    int64 `json:"loads"`
	Hits     int64 `json:"hits"`
	// Evictions is the number of items evicted to make room.
	Evictions int64 `json:"evictions"`
}

// HitRatio is Hits / Accesses (0 without accesses).
func (c Counts) HitRatio() float64 {
	if c.Accesses == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Accesses)
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Accesses += o.Accesses
	c.Loads += o.Loads
	c.Hits += o.Hits
	c.Evictions += o.Evictions
}

// Simulate runs a cache of slots items under policy p over the accesses
// (item ids, in order) and returns its counts. slots must be ≥ 1.
func Simulate(accesses []uint32, slots int, p Policy) Counts {
	var next []int
	if p == OPT {
		next = nextUses(accesses)
	}
	c := newCache(slots, p)
	for i, item := range accesses {
		nu := 0
		if next != nil {
			nu = next[i]
		}
		c.access(item, int64(i), nu)
	}
	return c.counts
}

// nextUses returns, for every access, the position of the next access to
// the same item (len(accesses) when there is none).
func nextUses(accesses []uint32) []int {
	next := make([]int, len(accesses))
	last := map[uint32]int{}
	for i := len(accesses) - 1; i >= 0; i-- {
		if j, ok := last[accesses[i]]; ok {
			next[i] = j
		} else {
			next[i] = len(accesses)
		}
		last[accesses[i]] = i
	}
	return next
}

// cache is one cache of slots items: a heap of resident items ordered by
// the policy's eviction key (smallest first).
type cache struct {
	slots  int
	policy Policy
	h      itemHeap
	where  map[uint32]*entry
	counts Counts
}

type entry struct {
	item  uint32
	k1    int64 // LRU: last use; LFU: uses; OPT: −next use
	k2    int64 // LFU: last use
	index int
}

func newCache(slots int, p Policy) *cache {
	return &cache{slots: max(slots, 1), policy: p, where: map[uint32]*entry{}}
}

// access uses item at time now; next is the time of its next use (OPT).
func (c *cache) access(item uint32, now int64, next int) {
	c.counts.Accesses++
	if e, ok := c.where[item]; ok {
		c.counts.Hits++
		c.touch(e, now, next)
		heap.Fix(&c.h, e.index)
		return
	}
	c.counts.Loads++
	if len(c.h) >= c.slots {
		ev := heap.Pop(&c.h).(*entry)
		delete(c.where, ev.item)
		c.counts.Evictions++
	}
	e := &entry{item: item}
	c.touch(e, now, next)
	heap.Push(&c.h, e)
	c.where[item] = e
}

// touch records a use of e at time now.
func (c *cache) touch(e *entry, now int64, next int) {
	switch c.policy {
	case LRU:
		e.k1 = now
	case LFU:
		e.k1++
		e.k2 = now
	case OPT:
		e.k1 = -int64(next)
	}
}

// itemHeap is a min-heap of entries by (k1, k2).
type itemHeap []*entry

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if h[i].k1 != h[j].k1 {
		return h[i].k1 < h[j].k1
	}
	return h[i].k2 < h[j].k2
}
func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *itemHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *itemHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
