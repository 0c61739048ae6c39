package agentic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/prefix"
)

// MaxLine is the longest JSON line (or .json file) a reader takes: one
// conversation with all its hash ids.
const MaxLine = 64 << 20

type wekaConv struct {
	ID        *string       `json:"id"`
	BlockSize *int          `json:"block_size"`
	Scope     string        `json:"hash_id_scope"`
	Start     *float64      `json:"start_time"`
	Requests  []wekaRequest `json:"requests"`
}

type wekaRequest struct {
	T        *float64      `json:"t"`
	Type     string        `json:"type"`
	Model    string        `json:"model"`
	In       *int          `json:"in"`
	Out      *int          `json:"out"`
	Hash     *[]int64      `json:"hash_ids"`
	API      *float64      `json:"api_time"`
	Think    *float64      `json:"think_time"`
	AgentID  string        `json:"agent_id"`
	Requests []wekaRequest `json:"requests"`
}

// ReadWeka reads WEKA/AgentX conversations: one JSON object per .json
// file, or one per line (JSON Lines), streamed: a line is decoded, turned
// into its compact conversation and dropped.
func ReadWeka(r io.Reader) (*Trace, error) {
	t := &Trace{Format: Weka}
	err := eachJSON(t, r, func(line int, c *wekaConv) {
		conv, ok := t.wekaConv(line, c)
		if ok {
			t.Conversations = append(t.Conversations, conv)
		}
	})
	if err != nil {
		return t, err
	}
	if len(t.Conversations) == 0 {
		return t, ErrEmpty
	}
	return t, nil
}

// eachJSON calls f with each JSON record of r, a whole document or one a
// line (prefix.EachRecord), decoded into a T; a record that does not
// decode is skipped and counted in t, and a line longer than MaxLine ends
// the reading.
func eachJSON[T any](t *Trace, r io.Reader, f func(line int, v *T)) error {
	return prefix.EachRecord(r, MaxLine, func(line int, raw []byte, tooLong bool) error {
		if tooLong {
			return fmt.Errorf("line %d: %w", line, bufio.ErrTooLong)
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.skip(line, "json", err.Error())
			return nil
		}
		f(line, &v)
		return nil
	})
}

func seconds(f float64) time.Duration {
	if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return time.Duration(f * 1e9)
}

// wekaConv checks and converts one conversation; a bad request or
// subagent is skipped and counted, a conversation without usable
// requests too.
func (t *Trace) wekaConv(line int, c *wekaConv) (*Conversation, bool) {
	if c.BlockSize == nil {
		t.skip(line, "block_size", "missing")
		return nil, false
	}
	if *c.BlockSize <= 0 || *c.BlockSize > 1<<20 {
		t.skip(line, "block_size", fmt.Sprintf("%d: want 1 to %d", *c.BlockSize, 1<<20))
		return nil, false
	}
	conv := &Conversation{Line: line, BlockSize: *c.BlockSize, Global: c.Scope == "global"}
	if c.ID != nil {
		conv.ID = *c.ID
	} else {
		conv.ID = fmt.Sprintf("line%d", line)
	}
	if c.Start != nil {
		conv.Start, conv.HasStart = seconds(*c.Start), true
	}
	if c.Requests == nil {
		t.skip(line, "requests", "missing")
		return nil, false
	}
	n := t.wekaBranch(line, "requests", conv.BlockSize, c.Requests, 0, &conv.Root)
	if n == 0 {
		t.skip(line, "requests", "no usable request")
		return nil, false
	}
	t.Requests += n
	return conv, true
}

// wekaBranch fills b from reqs (whose t are relative to base, the
// spawn's t, when session-absolute) and returns its usable requests.
func (t *Trace) wekaBranch(line int, path string, block int, reqs []wekaRequest, base float64, b *Branch) int {
	n := 0
	for i := range reqs {
		q := &reqs[i]
		where := fmt.Sprintf("%s[%d]", path, i)
		if q.T == nil {
			t.skip(line, where+".t", "missing")
			continue
		}
		at := seconds(*q.T - base)
		if q.Type == "subagent" {
			if len(q.Requests) == 0 {
				t.skip(line, where+".requests", "a subagent without requests")
				continue
			}
			// Nested t relative to the spawn or session-absolute.
			sub := &Branch{Agent: q.AgentID}
			nb := 0.0
			if f := reqs[i].Requests[0].T; f != nil && prefix.SubagentTimesAbsolute(*q.T, *f) {
				nb = *q.T
			}
			k := t.wekaBranch(line, where+".requests", block, q.Requests, nb, sub)
			if k == 0 {
				t.skip(line, where+".requests", "a subagent without usable requests")
				continue
			}
			b.Steps = append(b.Steps, Step{At: at, Sub: sub})
			n += k
			continue
		}
		s := Step{At: at, Model: q.Model}
		switch {
		case q.In == nil:
			t.skip(line, where+".in", "missing")
			continue
		case *q.In <= 0 || *q.In > MaxRoundTokens:
			t.skip(line, where+".in", fmt.Sprintf("%d: want 1 to %d", *q.In, MaxRoundTokens))
			continue
		case q.Out == nil:
			t.skip(line, where+".out", "missing")
			continue
		case *q.Out < 0 || *q.Out > MaxRoundTokens:
			t.skip(line, where+".out", fmt.Sprintf("%d: want 0 to %d", *q.Out, MaxRoundTokens))
			continue
		case q.Hash == nil:
			t.skip(line, where+".hash_ids", "missing")
			continue
		}
		s.In, s.Out = *q.In, max(*q.Out, 1)
		h := *q.Hash
		if full, all := s.In/block, (s.In+block-1)/block; len(h) != full && len(h) != all {
			t.skip(line, where+".hash_ids", fmt.Sprintf("%d ids for in %d (block %d): want %d or %d", len(h), s.In, block, full, all))
			continue
		}
		bad := false
		for _, id := range h {
			if id < 0 {
				bad = true
			}
		}
		if bad {
			t.skip(line, where+".hash_ids", "a negative id")
			continue
		}
		s.Hash = make([]uint64, len(h))
		for j, id := range h {
			s.Hash[j] = uint64(id)
		}
		if q.Think != nil {
			s.Think, s.HasThink = seconds(*q.Think), true
		}
		if q.API != nil {
			s.API, s.HasAPI = seconds(*q.API), true
		}
		b.Steps = append(b.Steps, s)
		n++
	}
	return n
}
