// Package prefix reads prefix traces — requests whose prompts are named by
// chained block hash ids (Mooncake, Bailian, WEKA) — as a stream, analyzes
// their prefix reuse (infinite and LRU caches, the prefix tree) and
// synthesizes scaled copies of them.
package prefix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/valyala/fastjson"
)

// Format is a prefix trace's layout.
type Format string

// Formats.
const (
	// Mooncake: JSONL, timestamp (ms), input_length, output_length,
	// hash_ids of 512-token blocks.
	Mooncake Format = "mooncake"
	// Bailian: JSONL, chat_id, parent_chat_id (-1 for a root), turn,
	// timestamp (s), input_length, output_length, hash_ids of 16-token
	// blocks.
	Bailian Format = "bailian"
	// WEKA: one conversation a JSON document (or a JSONL line): block_size,
	// requests with t (s), in, out, hash_ids, and subagents with their own
	// requests.
	WEKA Format = "weka"
)

// BlockSize is a format's default tokens per hash id (WEKA's files say
// theirs).
func (f Format) BlockSize() int {
	switch f {
	case Bailian:
		return 16
	case WEKA:
		return 64
	}
	return 512
}

// ParseFormat parses --trace-format for prefix traces ("" or auto: detect).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", "auto":
		return "", nil
	case Mooncake, Bailian, WEKA:
		return f, nil
	case "agentx":
		return WEKA, nil
	}
	return "", fmt.Errorf("prefix trace format %q: want mooncake, bailian or weka", s)
}

// MaxTokens bounds a request's input or output tokens, and MaxBlocks the
// blocks its input spans: a larger one is an unusable record (a bound on
// what a trace can make the tool hold, not a model's context).
const (
	MaxTokens = 1 << 24
	MaxBlocks = 1 << 20
)

// Request is one request of a prefix trace.
type Request struct {
	// Line is the line of the file the request was read from (of its
	// conversation's document for WEKA).
	Line int
	// T is the request's time in seconds: the trace's own for Mooncake and
	// Bailian; for WEKA the conversation's offset plus the request's (a
	// subagent's requests after its spawn).
	T float64
	// In and Out are the input and output tokens.
	In, Out int
	// Blocks are the hash ids of the prompt's blocks, chained: a shared
	// leading run is a shared prefix. WEKA's local ids are made distinct
	// between conversations.
	Blocks []uint64
	Chat
	// Conv is the WEKA conversation (0-based) the request belongs to.
	Conv int
	// BlockSize is the tokens a hash id names (the format's, or the WEKA
	// file's block_size).
	BlockSize int
}

// Chat is a Bailian request's chat ids, turn and type (0 elsewhere;
// Parent -1 for a root), kept from the read request to the written one.
type Chat struct {
	ChatID, Parent int64
	Turn           int
	Type           string
}

// Skip is one unusable record.
type Skip struct {
	Line    int
	Field   string
	Problem string
}

func (s Skip) Error() string {
	if s.Field == "" {
		return fmt.Sprintf("line %d: %s", s.Line, s.Problem)
	}
	return fmt.Sprintf("line %d: %s: %s", s.Line, s.Field, s.Problem)
}

// Skips counts unusable records, keeping the first few.
type Skips struct {
	Count int
	First []Skip
}

func (s *Skips) add(k Skip) {
	s.Count++
	if len(s.First) < 5 {
		s.First = append(s.First, k)
	}
}

// Warning is the one-line warning for the skipped records ("" for none).
func (s *Skips) Warning() string {
	if s.Count == 0 {
		return ""
	}
	lines := make([]string, len(s.First))
	for i, k := range s.First {
		lines[i] = fmt.Sprint(k.Line)
	}
	more := ""
	if s.Count > len(s.First) {
		more = ", …"
	}
	return fmt.Sprintf("skipped %d unusable record(s) (lines %s%s); first: %v; --strict makes this an error", s.Count, strings.Join(lines, ", "), more, s.First[0])
}

// Options configure Read.
type Options struct {
	// Format: "" detects it from the first record's keys.
	Format Format
	// Strict makes the first unusable record an error.
	Strict bool
	// MaxLine bounds a JSONL line (default 64 MiB); a longer one is
	// skipped. A WEKA document (a whole .json file) is bounded by it too.
	MaxLine int
}

// Info is what Read learned about the file.
type Info struct {
	Format    Format
	BlockSize int
	// Records read (lines or conversations) and requests yielded.
	Records, Requests int
	Skips             Skips
	// OutOfOrder counts requests earlier than the one before them.
	OutOfOrder int
	// Conversations (WEKA: documents; Bailian: root chats).
	Conversations int
}

// ErrStop, returned by Read's callback, ends the read without an error.
var ErrStop = errors.New("stop")

// Read streams the prefix trace r (named name in messages) and calls fn
// for every usable request, in file order (WEKA: each conversation's
// requests in time order, conversations one after another, each starting
// where the previous one's last request was). Unusable records are skipped
// and counted in Info, or with opt.Strict returned as an error naming line
// and field.
func Read(r io.Reader, name string, opt Options, fn func(*Request) error) (*Info, error) {
	maxLine := opt.MaxLine
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	info := &Info{Format: opt.Format}
	rd := &reader{name: name, opt: opt, info: info, fn: fn, chats: map[int64]int64{}, lastT: math.Inf(-1)}
	var stop error // what ends the reading from a record
	err := EachRecord(r, maxLine, func(line int, b []byte, tooLong bool) error {
		if tooLong {
			stop = rd.skip(Skip{Line: line, Problem: fmt.Sprintf("longer than %d MiB", maxLine>>20)})
		} else {
			stop = rd.record(line, b)
		}
		return stop
	})
	if err != nil && stop == nil {
		return info, fmt.Errorf("%s: %w", name, err)
	}
	return info, rd.finish(stop)
}

type reader struct {
	name   string
	opt    Options
	info   *Info
	fn     func(*Request) error
	parser fastjson.Parser
	chats  map[int64]int64 // Bailian: chat id read → a chat up its chain of parents (top)
	seen   map[uint64]struct{}
	lastT  float64
	// WEKA: the offset of the next conversation and the id namespace.
	convOffset float64
	idBase     uint64
}

func (rd *reader) finish(err error) error {
	if errors.Is(err, ErrStop) {
		return nil
	}
	var sk Skip
	if errors.As(err, &sk) {
		return fmt.Errorf("prefix: %s: %w", rd.name, err)
	}
	return err
}

// skip counts k, or returns it under --strict.
func (rd *reader) skip(k Skip) error {
	if rd.opt.Strict {
		return k
	}
	rd.info.Skips.add(k)
	return nil
}

// emit hands a request to the callback, counting order.
func (rd *reader) emit(q *Request) error {
	if q.T < rd.lastT {
		rd.info.OutOfOrder++
	} else {
		rd.lastT = q.T
	}
	rd.info.Requests++
	q.BlockSize = rd.info.BlockSize
	return rd.fn(q)
}

// record parses one JSONL line or JSON document (fastjson for the
// request lines, encoding/json for a WEKA conversation).
func (rd *reader) record(line int, b []byte) error {
	rd.info.Records++
	v, err := rd.parser.ParseBytes(b)
	if err != nil || v.Type() != fastjson.TypeObject {
		return rd.skip(Skip{Line: line, Problem: "not a JSON object"})
	}
	if rd.info.Format == "" {
		switch {
		case v.Exists("requests"):
			rd.info.Format = WEKA
		case v.Exists("chat_id") || v.Exists("parent_chat_id"):
			rd.info.Format = Bailian
		case v.Exists("hash_ids"):
			rd.info.Format = Mooncake
		default:
			var keys []string
			v.GetObject().Visit(func(k []byte, _ *fastjson.Value) { keys = append(keys, string(k)) })
			sort.Strings(keys)
			return fmt.Errorf("prefix: %s: line %d: not a prefix trace: no hash_ids, chat_id or requests among its keys %q; give --trace-format mooncake, bailian or weka", rd.name, line, strings.Join(keys, ","))
		}
	}
	if rd.info.BlockSize == 0 {
		rd.info.BlockSize = rd.info.Format.BlockSize()
	}
	switch rd.info.Format {
	case WEKA:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return rd.skip(Skip{Line: line, Problem: "not a JSON object"})
		}
		return rd.weka(line, obj)
	case Bailian:
		return rd.bailian(line, v)
	default:
		return rd.mooncake(line, v)
	}
}

// num reads a non-negative number field.
func num(v *fastjson.Value, key string) (float64, string) {
	x := v.Get(key)
	if x == nil || x.Type() == fastjson.TypeNull {
		return 0, "missing"
	}
	if x.Type() != fastjson.TypeNumber {
		return 0, "not a number"
	}
	f, err := x.Float64()
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, "not a number"
	case f < 0:
		return 0, "negative"
	}
	return f, ""
}

// length reads a token count field.
func length(v *fastjson.Value, key string) (int, string) {
	f, p := num(v, key)
	if p != "" {
		return 0, p
	}
	if f > MaxTokens {
		return 0, fmt.Sprintf("%.0f: more than %d tokens", f, MaxTokens)
	}
	return int(f), ""
}

// hashIDs reads the hash_ids array: integers (Bailian's SipHash ids use the
// whole uint64 range; a negative one is a signed hash, its bits kept).
func hashIDs(v *fastjson.Value, key string) ([]uint64, string) {
	x := v.Get(key)
	if x == nil || x.Type() == fastjson.TypeNull {
		return nil, "missing"
	}
	arr, err := x.Array()
	if err != nil {
		return nil, "not an array of integers"
	}
	out := make([]uint64, len(arr))
	for i, el := range arr {
		if el.Type() != fastjson.TypeNumber {
			return nil, "not an array of integers"
		}
		u, err := el.Uint64()
		if err != nil {
			iv, err := el.Int64()
			if err != nil {
				return nil, fmt.Sprintf("element %d: %s: not an integer", i, el)
			}
			u = uint64(iv)
		}
		out[i] = u
	}
	return out, ""
}

func (rd *reader) mooncake(line int, obj *fastjson.Value) error {
	q := &Request{Line: line, Chat: Chat{Parent: -1}}
	ts, p := num(obj, "timestamp")
	if p != "" {
		return rd.skip(Skip{line, "timestamp", p})
	}
	q.T = ts / 1000
	if sk := rd.lengthsAndBlocks(line, obj, q, "input_length", "output_length"); sk != nil {
		return rd.skip(*sk)
	}
	return rd.emit(q)
}

// lengthsAndBlocks reads q's lengths and hash ids, or says what is wrong.
func (rd *reader) lengthsAndBlocks(line int, obj *fastjson.Value, q *Request, in, out string) *Skip {
	var p string
	if q.In, p = length(obj, in); p != "" {
		return &Skip{line, in, p}
	}
	if q.Out, p = length(obj, out); p != "" {
		return &Skip{line, out, p}
	}
	if q.Blocks, p = hashIDs(obj, "hash_ids"); p != "" {
		return &Skip{line, "hash_ids", p}
	}
	bs := rd.info.BlockSize
	if need := (q.In + bs - 1) / bs; len(q.Blocks) > need {
		return &Skip{line, "hash_ids", fmt.Sprintf("%d ids for %d input tokens (at most %d blocks of %d)", len(q.Blocks), q.In, need, bs)}
	} else if need > MaxBlocks {
		return &Skip{line, in, fmt.Sprintf("%d tokens: more than %d blocks of %d", q.In, MaxBlocks, bs)}
	}
	return rd.repeated(line, "hash_ids", q.Blocks)
}

// repeated says when an id comes twice in one request: the ids are chained
// (each names its whole prefix), so a request cannot hold one twice.
func (rd *reader) repeated(line int, field string, ids []uint64) *Skip {
	if rd.seen == nil {
		rd.seen = map[uint64]struct{}{}
	}
	clear(rd.seen)
	for _, id := range ids {
		if _, dup := rd.seen[id]; dup {
			return &Skip{line, field, fmt.Sprintf("id %d repeated (the ids are chained: each names its whole prefix)", id)}
		}
		rd.seen[id] = struct{}{}
	}
	return nil
}

func (rd *reader) bailian(line int, obj *fastjson.Value) error {
	q := &Request{Line: line, Chat: Chat{Parent: -1, Turn: 1}}
	ts, p := num(obj, "timestamp")
	if p != "" {
		return rd.skip(Skip{line, "timestamp", p})
	}
	q.T = ts
	id, p := intField(obj, "chat_id")
	if p != "" {
		return rd.skip(Skip{line, "chat_id", p})
	}
	q.ChatID = id
	if obj.Exists("parent_chat_id") {
		if q.Parent, p = intField(obj, "parent_chat_id"); p != "" {
			return rd.skip(Skip{line, "parent_chat_id", p})
		}
	}
	if x := obj.Get("type"); x != nil && x.Type() == fastjson.TypeString {
		q.Type = string(x.GetStringBytes()) // informational
	}
	if obj.Exists("turn") {
		t, p := length(obj, "turn")
		if p != "" {
			return rd.skip(Skip{line, "turn", p})
		}
		q.Turn = t
	}
	if _, dup := rd.chats[id]; dup {
		return rd.skip(Skip{line, "chat_id", fmt.Sprintf("%d repeated", id)})
	}
	// A cycle: following the parents from this chat comes back to it,
	// that is the top of the parent's chain is this chat (a chat read
	// before it named it as its parent).
	top := id
	if q.Parent >= 0 {
		if top = rd.top(q.Parent); top == id {
			return rd.skip(Skip{line, "parent_chat_id", fmt.Sprintf("a cycle in the parent links through chat %d", id)})
		}
	}
	if sk := rd.lengthsAndBlocks(line, obj, q, "input_length", "output_length"); sk != nil {
		return rd.skip(*sk)
	}
	if q.Parent < 0 {
		rd.info.Conversations++
	}
	rd.chats[id] = top
	return rd.emit(q)
}

// top returns the chat at the top of id's chain of parents as read so far:
// the first one up the chain not read yet (or without a parent). The links
// are shortened as they are followed (a union-find), so that a chain of n
// chats costs O(n) in all, not O(n²).
func (rd *reader) top(id int64) int64 {
	t := id
	for {
		next, ok := rd.chats[t]
		if !ok || next == t {
			break
		}
		t = next
	}
	for id != t {
		next := rd.chats[id]
		rd.chats[id] = t
		id = next
	}
	return t
}

func intField(v *fastjson.Value, key string) (int64, string) {
	x := v.Get(key)
	if x == nil || x.Type() == fastjson.TypeNull {
		return 0, "missing"
	}
	n, err := x.Int64()
	if x.Type() != fastjson.TypeNumber || err != nil {
		return 0, "not an integer"
	}
	return n, ""
}

// wekaReq is a WEKA request or subagent entry.
type wekaReq struct {
	T        *float64          `json:"t"`
	Type     string            `json:"type"`
	In       *json.Number      `json:"in"`
	Out      *json.Number      `json:"out"`
	HashIDs  []json.Number     `json:"hash_ids"`
	Requests []json.RawMessage `json:"requests"`
}

// weka reads one conversation: its requests (and its subagents'), sorted
// by time, offset after the previous conversation.
func (rd *reader) weka(line int, obj map[string]json.RawMessage) error {
	bs := rd.info.Format.BlockSize()
	if raw, ok := obj["block_size"]; ok {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return rd.skip(Skip{line, "block_size", "not a positive integer"})
		}
		bs = n
	}
	if rd.info.Conversations == 0 || rd.info.BlockSize == 0 {
		rd.info.BlockSize = bs
	} else if bs != rd.info.BlockSize {
		return rd.skip(Skip{line, "block_size", fmt.Sprintf("%d, not the %d of the first conversation", bs, rd.info.BlockSize)})
	}
	var top []json.RawMessage
	if err := json.Unmarshal(obj["requests"], &top); err != nil {
		return rd.skip(Skip{line, "requests", "not an array"})
	}
	var reqs []*Request
	var maxID uint64
	var walk func(list []json.RawMessage, base float64, path string) *Skip
	walk = func(list []json.RawMessage, base float64, path string) *Skip {
		for i, raw := range list {
			var w wekaReq
			field := fmt.Sprintf("%s[%d]", path, i)
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&w); err != nil {
				return &Skip{line, field, "not a request object"}
			}
			if w.T == nil || *w.T < 0 || math.IsNaN(*w.T) {
				return &Skip{line, field + ".t", "missing or negative"}
			}
			if w.Type == "subagent" {
				if len(w.Requests) == 0 {
					return &Skip{line, field + ".requests", "a subagent without requests"}
				}
				sub := base + *w.T
				var first struct {
					T *float64 `json:"t"`
				}
				if json.Unmarshal(w.Requests[0], &first) == nil && first.T != nil && SubagentTimesAbsolute(*w.T, *first.T) {
					sub = base
				}
				if s := walk(w.Requests, sub, field+".requests"); s != nil {
					return s
				}
				continue
			}
			q := &Request{Line: line, T: base + *w.T, Chat: Chat{Parent: -1}, Conv: rd.info.Conversations}
			for _, f := range []struct {
				n   *json.Number
				dst *int
				key string
			}{{w.In, &q.In, "in"}, {w.Out, &q.Out, "out"}} {
				if f.n == nil {
					return &Skip{line, field + "." + f.key, "missing"}
				}
				v, err := f.n.Int64()
				if err != nil || v < 0 || v > MaxTokens {
					return &Skip{line, field + "." + f.key, fmt.Sprintf("not a token count of at most %d", MaxTokens)}
				}
				*f.dst = int(v)
			}
			if (q.In+bs-1)/bs > MaxBlocks {
				return &Skip{line, field + ".in", fmt.Sprintf("%d tokens: more than %d blocks of %d", q.In, MaxBlocks, bs)}
			}
			if w.HashIDs == nil {
				return &Skip{line, field + ".hash_ids", "missing"}
			}
			if need := (q.In + bs - 1) / bs; len(w.HashIDs) > need {
				return &Skip{line, field + ".hash_ids", fmt.Sprintf("%d ids for %d input tokens (at most %d blocks of %d)", len(w.HashIDs), q.In, need, bs)}
			}
			q.Blocks = make([]uint64, len(w.HashIDs))
			for k, n := range w.HashIDs {
				v, err := n.Int64()
				if err != nil || v < 0 {
					return &Skip{line, fmt.Sprintf("%s.hash_ids[%d]", field, k), "not an integer ≥ 0"}
				}
				maxID = max(maxID, uint64(v))
				q.Blocks[k] = uint64(v)
			}
			if s := rd.repeated(line, field+".hash_ids", q.Blocks); s != nil {
				return s
			}
			reqs = append(reqs, q)
		}
		return nil
	}
	if s := walk(top, 0, "requests"); s != nil {
		return rd.skip(*s)
	}
	// Local ids: each conversation its own namespace.
	for _, q := range reqs {
		for k := range q.Blocks {
			q.Blocks[k] += rd.idBase
		}
	}
	rd.idBase += maxID + 1
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].T < reqs[j].T })
	off := rd.convOffset
	last := off
	for _, q := range reqs {
		q.T += off
		last = max(last, q.T)
		if err := rd.emit(q); err != nil {
			return err
		}
	}
	rd.convOffset = last
	rd.info.Conversations++
	return nil
}

// SubagentTimesAbsolute reports whether a WEKA subagent spawned at t
// (seconds) times its requests from the conversation's start, as
// SemiAnalysis's variant does, rather than from the spawn, as
// kv-cache-tester does (its first request at 0): its first request comes
// at or after the spawn's own t, which is > 0. A first request a
// microsecond before the spawn counts as at it (times written rounded).
// Replay (pkg/agentic) and analysis read a subagent by this one rule.
func SubagentTimesAbsolute(t, first float64) bool {
	return t > 0 && first >= t-1e-6
}
