package agentic

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// BailianBlock is the tokens of one Bailian hash id.
const BailianBlock = 16

type bailianRow struct {
	Chat   *int64   `json:"chat_id"`
	Parent *int64   `json:"parent_chat_id"`
	Time   *float64 `json:"timestamp"`
	In     *int     `json:"input_length"`
	Out    *int     `json:"output_length"`
	Turn   *int     `json:"turn"`
	Hash   *[]int64 `json:"hash_ids"`
}

type bailianReq struct {
	parent int64
	t      time.Duration
	line   int
	step   Step
}

// ReadBailian reads the Qwen Bailian usage trace (JSON Lines: chat_id,
// parent_chat_id (-1 for a first turn), turn, timestamp (s), input_length,
// output_length, hash_ids of 16-token blocks, global). A conversation is
// a first turn and every request whose parent links lead to it, in time
// order; a parent outside the file starts a conversation of its own, and
// requests whose links make a cycle are skipped.
func ReadBailian(r io.Reader) (*Trace, error) {
	t := &Trace{Format: Bailian}
	reqs := map[int64]*bailianReq{}
	var order []int64
	err := eachJSON(t, r, func(line int, b *bailianRow) {
		switch {
		case b.Chat == nil:
			t.skip(line, "chat_id", "missing")
			return
		case b.Parent == nil:
			t.skip(line, "parent_chat_id", "missing")
			return
		case b.Time == nil || *b.Time < 0:
			t.skip(line, "timestamp", "missing or negative")
			return
		case b.In == nil || *b.In <= 0:
			t.skip(line, "input_length", "missing or ≤ 0")
			return
		case *b.In > MaxRoundTokens:
			t.skip(line, "input_length", fmt.Sprintf("%d: want at most %d", *b.In, MaxRoundTokens))
			return
		case b.Out == nil || *b.Out < 0:
			t.skip(line, "output_length", "missing or negative")
			return
		case *b.Out > MaxRoundTokens:
			t.skip(line, "output_length", fmt.Sprintf("%d: want at most %d", *b.Out, MaxRoundTokens))
			return
		case b.Hash == nil:
			t.skip(line, "hash_ids", "missing")
			return
		}
		if _, dup := reqs[*b.Chat]; dup {
			t.skip(line, "chat_id", fmt.Sprintf("%d repeated", *b.Chat))
			return
		}
		h := *b.Hash
		if full, all := *b.In/BailianBlock, (*b.In+BailianBlock-1)/BailianBlock; len(h) != full && len(h) != all {
			t.skip(line, "hash_ids", fmt.Sprintf("%d ids for input_length %d: want %d", len(h), *b.In, all))
			return
		}
		s := Step{In: *b.In, Out: max(*b.Out, 1), Hash: make([]uint64, len(h))}
		for j, id := range h {
			s.Hash[j] = uint64(id)
		}
		reqs[*b.Chat] = &bailianReq{parent: *b.Parent, t: seconds(*b.Time), line: line, step: s}
		order = append(order, *b.Chat)
	})
	if err != nil {
		return t, err
	}
	// Each request's root: follow the parent links; a cycle skips its
	// members (and whatever hangs from them).
	root := map[int64]int64{}
	const cyclic = -1 << 62
	for _, id := range order {
		var path []int64
		seen := map[int64]bool{}
		cur := id
		r := int64(cyclic)
		for {
			if v, ok := root[cur]; ok {
				r = v
				break
			}
			if seen[cur] {
				break // a cycle
			}
			seen[cur] = true
			path = append(path, cur)
			q := reqs[cur]
			p, ok := reqs[q.parent]
			if q.parent < 0 || !ok || p == nil {
				r = cur
				break
			}
			cur = q.parent
		}
		for _, p := range path {
			root[p] = r
		}
	}
	convs := map[int64]*Conversation{}
	var roots []int64
	for _, id := range order {
		q := reqs[id]
		r := root[id]
		if r == cyclic {
			t.skip(q.line, "parent_chat_id", fmt.Sprintf("chat %d: a cycle of parent links", id))
			continue
		}
		c := convs[r]
		if c == nil {
			rq := reqs[r]
			c = &Conversation{ID: fmt.Sprint(r), Line: rq.line, BlockSize: BailianBlock, Global: true, Start: rq.t, HasStart: true}
			convs[r] = c
			roots = append(roots, r)
		}
		s := q.step
		s.At = max(q.t-c.Start, 0)
		c.Root.Steps = append(c.Root.Steps, s)
		t.Requests++
	}
	for _, r := range roots {
		c := convs[r]
		sort.SliceStable(c.Root.Steps, func(i, j int) bool { return c.Root.Steps[i].At < c.Root.Steps[j].At })
		t.Conversations = append(t.Conversations, c)
	}
	sort.SliceStable(t.Conversations, func(i, j int) bool { return t.Conversations[i].Start < t.Conversations[j].Start })
	if len(t.Conversations) == 0 {
		return t, ErrEmpty
	}
	return t, nil
}
