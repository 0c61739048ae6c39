package prefix

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// SynthConfig is how Synthesizer scales a trace (AIPerf's synthesize-trace
// knobs).
type SynthConfig struct {
	// Speedup divides every timestamp (2: twice the rate, half the span).
	Speedup float64
	// PrefixLenMultiplier stretches every shared block (a block more than
	// one request uses) into a chain of blocks, keeping the tree's
	// branching: a shared run of L blocks becomes ⌊L·m⌋ blocks.
	PrefixLenMultiplier float64
	// PrefixRootMultiplier makes N independent copies of the prefix tree;
	// each request goes to one, drawn with Seed.
	PrefixRootMultiplier int
	// PromptLenMultiplier scales each request's unique tokens (those after
	// its shared run), OutputLenMultiplier its output.
	PromptLenMultiplier, OutputLenMultiplier float64
	// MaxISL and MaxOSL cap the input and output tokens (0: no cap).
	MaxISL, MaxOSL int
	Seed           uint64
	// InBlockSize is the trace's tokens a block; OutBlockSize the written
	// trace's, a multiple of it (Mooncake's 512).
	InBlockSize, OutBlockSize int
}

// MaxRootMultiplier is the most copies of the prefix tree
// (SynthConfig.PrefixRootMultiplier).
const MaxRootMultiplier = 1 << 20

// MaxSpan is the longest span a written trace may have (a replay's
// longest schedule, 366 days).
const MaxSpan = 366 * 24 * 3600.0

// CheckSpeedup returns an error if c.Speedup would put the requests of a
// trace whose timestamps run from first to last (s) more than MaxSpan
// apart, or past what the written timestamps can hold exactly.
func (c *SynthConfig) CheckSpeedup(first, last float64) error {
	span := (last - first) / c.Speedup
	if span > MaxSpan {
		return fmt.Errorf("--speedup %g: the trace's span of %.6g s would be %.6g s, past the longest a replay takes (%g s, 366 days): want --speedup ≥ %.3g",
			c.Speedup, last-first, span, MaxSpan, (last-first)/MaxSpan)
	}
	// Integer milliseconds exact in a float64.
	const most = 1 << 53 / 1000.0
	if t := max(math.Abs(first), math.Abs(last)) / c.Speedup; t > most {
		return fmt.Errorf("--speedup %g: the trace's timestamp %.6g s would be %.6g s, past the largest written exactly (%.6g s): want --speedup ≥ %.3g",
			c.Speedup, max(math.Abs(first), math.Abs(last)), t, most, max(math.Abs(first), math.Abs(last))/most)
	}
	return nil
}

// Validate returns every problem of c.
func (c *SynthConfig) Validate() error {
	var errs []error
	pos := func(flag string, v float64) {
		if !(v > 0) || v > 1000 {
			errs = append(errs, fmt.Errorf("%s %g: want a number > 0, at most 1000", flag, v))
		}
	}
	pos("--speedup", c.Speedup)
	pos("--prefix-len-multiplier", c.PrefixLenMultiplier)
	pos("--prompt-len-multiplier", c.PromptLenMultiplier)
	pos("--output-len-multiplier", c.OutputLenMultiplier)
	if c.PrefixRootMultiplier < 1 || c.PrefixRootMultiplier > MaxRootMultiplier {
		errs = append(errs, fmt.Errorf("--prefix-root-multiplier %d: want an integer from 1 to %d", c.PrefixRootMultiplier, MaxRootMultiplier))
	}
	if c.MaxISL < 0 || c.MaxOSL < 0 {
		errs = append(errs, errors.New("--max-isl and --max-osl: want ≥ 0 (0: no cap)"))
	}
	if c.InBlockSize < 1 || c.OutBlockSize < c.InBlockSize || c.OutBlockSize%c.InBlockSize != 0 {
		errs = append(errs, fmt.Errorf("block size %d: the written trace's blocks (%d tokens) must be a multiple of the trace's", c.InBlockSize, c.OutBlockSize))
	}
	return errors.Join(errs...)
}

// Synthesizer rewrites the requests of a trace whose block uses a first
// pass counted (an Analyzer over the same requests).
type Synthesizer struct {
	cfg   SynthConfig
	uses  *Analyzer
	rng   *rand.Rand
	ids   map[synthKey]uint64
	fresh uint64
}

type synthKey struct {
	copy int32
	j    int32
	id   uint64
}

// NewSynthesizer returns a synthesizer; uses is the Analyzer of a first
// pass over the same trace (it says which blocks are shared).
func NewSynthesizer(cfg SynthConfig, uses *Analyzer) *Synthesizer {
	return &Synthesizer{cfg: cfg, uses: uses, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), ids: map[synthKey]uint64{}}
}

// Out is one written request.
type Out struct {
	T       float64
	In, Out int
	Blocks  []uint64
	Chat    // kept from the request
}

// Rewrite returns q scaled.
func (s *Synthesizer) Rewrite(q *Request) Out {
	c := &s.cfg
	B := c.InBlockSize
	o := Out{T: q.T / c.Speedup, Chat: q.Chat}
	copyN := int32(0)
	if c.PrefixRootMultiplier > 1 {
		copyN = int32(s.rng.IntN(c.PrefixRootMultiplier))
	}
	// The shared run: leading blocks more than one request uses.
	shared := 0
	for _, id := range q.Blocks {
		i, ok := s.uses.index[id]
		if !ok || s.uses.nodes[i].uses < 2 {
			break
		}
		shared++
	}
	var blocks []uint64
	m := c.PrefixLenMultiplier
	for d := 1; d <= shared; d++ {
		id := q.Blocks[d-1]
		n := int(math.Floor(float64(d)*m+1e-9)) - int(math.Floor(float64(d-1)*m+1e-9))
		n = min(n, MaxBlocks-len(blocks))
		for j := range n {
			k := synthKey{copy: copyN, j: int32(j), id: id}
			nid, ok := s.ids[k]
			if !ok {
				nid = s.fresh
				s.fresh++
				s.ids[k] = nid
			}
			blocks = append(blocks, nid)
		}
	}
	var in int
	if rest := q.In - shared*B; rest >= 0 {
		u := int(min(math.Round(float64(rest)*c.PromptLenMultiplier), MaxTokens))
		in = len(blocks)*B + u
		for range min((u+B-1)/B, MaxBlocks) {
			blocks = append(blocks, s.fresh)
			s.fresh++
		}
	} else {
		// The shared run ends with a partial block: keep its shortfall.
		in = max(len(blocks)*B+rest, 0)
	}
	if in < 1 {
		in = 1
	}
	// What a request can hold (MaxTokens, MaxBlocks of the trace's blocks).
	in = min(in, MaxTokens, MaxBlocks*B)
	if c.MaxISL > 0 && in > c.MaxISL {
		in = c.MaxISL
	}
	if n := (in + B - 1) / B; len(blocks) > n {
		blocks = blocks[:n]
	}
	o.In = in
	o.Out = max(int(math.Round(float64(q.Out)*c.OutputLenMultiplier)), 1)
	if c.MaxOSL > 0 && o.Out > c.MaxOSL {
		o.Out = c.MaxOSL
	}
	// Re-block: the id of a group's last block names the group's prefix
	// (the ids are chained).
	if r := c.OutBlockSize / B; r > 1 {
		g := make([]uint64, 0, (len(blocks)+r-1)/r)
		for end := r; end-r < len(blocks); end += r {
			g = append(g, blocks[min(end, len(blocks))-1])
		}
		blocks = g
	}
	o.Blocks = blocks
	return o
}

// AppendMooncake appends o as one Mooncake JSONL line (timestamp in
// integer ms).
func AppendMooncake(b []byte, o Out) []byte {
	b = append(b, `{"timestamp": `...)
	b = strconv.AppendInt(b, int64(math.Round(o.T*1000)), 10)
	b = appendLengths(b, o)
	return appendHashIDs(b, o.Blocks)
}

// AppendBailian appends o as one Bailian JSONL line (timestamp in seconds).
func AppendBailian(b []byte, o Out) []byte {
	b = append(b, `{"chat_id": `...)
	b = strconv.AppendInt(b, o.ChatID, 10)
	b = append(b, `, "parent_chat_id": `...)
	b = strconv.AppendInt(b, o.Parent, 10)
	b = append(b, `, "timestamp": `...)
	b = strconv.AppendFloat(b, math.Round(o.T*1e6)/1e6, 'f', -1, 64)
	b = appendLengths(b, o)
	if o.Type != "" {
		b = append(b, `, "type": `...)
		b = strconv.AppendQuote(b, o.Type)
	}
	b = append(b, `, "turn": `...)
	b = strconv.AppendInt(b, int64(o.Turn), 10)
	return appendHashIDs(b, o.Blocks)
}

// appendLengths appends a line's input_length and output_length fields.
func appendLengths(b []byte, o Out) []byte {
	b = append(b, `, "input_length": `...)
	b = strconv.AppendInt(b, int64(o.In), 10)
	b = append(b, `, "output_length": `...)
	return strconv.AppendInt(b, int64(o.Out), 10)
}

// appendHashIDs appends a line's last field, hash_ids, and ends it.
func appendHashIDs(b []byte, ids []uint64) []byte {
	b = append(b, `, "hash_ids": [`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, id, 10)
	}
	return append(b, "]}\n"...)
}
