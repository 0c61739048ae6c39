package agentic

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TraceLabBlock is the block size TraceLab's prefix lengths are cut in:
// a round shares floor(prefix/64) blocks with the previous round.
const TraceLabBlock = 64

// MaxRoundTokens bounds a TraceLab round's prompt: its block ids are
// made, not read, so a number in the file must not size them unbounded.
const MaxRoundTokens = 1 << 24

// tlRound is one TraceLab round, compact.
type tlRound struct {
	session    string
	round      int
	line       int
	prefix, in int // in: the whole prompt
	out        int
	// start, end: the round's first and last event (JSONL); wait: the
	// tool wait after it (CSV).
	start, end time.Time
	timed      bool
	wait       time.Duration
	hasWait    bool
}

// ReadTraceLab reads TraceLab rounds: the session workload CSV
// (session_id, round_idx, prefix_len, input_len, output_len,
// tool_wait_after_ms) or the round trace JSONL (session_id, round_index,
// input_tokens_total, prefix_tokens, output_tokens, timing_events). A
// session is a conversation; its rounds are steps whose prompts share
// prefix_len tokens with the previous round's.
func ReadTraceLab(r io.Reader) (*Trace, error) {
	t := &Trace{Format: TraceLab}
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(1)
	var rounds []tlRound
	var err error
	if len(head) > 0 && head[0] == '{' {
		rounds, err = t.traceLabJSONL(br)
	} else {
		rounds, err = t.traceLabCSV(br)
	}
	if err != nil {
		return t, err
	}
	t.traceLabSessions(rounds)
	if len(t.Conversations) == 0 {
		return t, ErrEmpty
	}
	return t, nil
}

func (t *Trace) traceLabCSV(r io.Reader) ([]tlRound, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	need := []string{"session_id", "round_idx", "prefix_len", "input_len", "output_len", "tool_wait_after_ms"}
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("header: no %s column (want %s)", n, strings.Join(need, ","))
		}
	}
	var out []tlRound
	line := 1
	for {
		rec, err := cr.Read()
		line++
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			t.skip(line, "csv", err.Error())
			continue
		}
		get := func(name string) (int, bool) {
			i := col[name]
			if i >= len(rec) || strings.TrimSpace(rec[i]) == "" {
				t.skip(line, name, "missing")
				return 0, false
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || v < 0 || v > 1<<40 {
				t.skip(line, name, fmt.Sprintf("%q: want a number ≥ 0", rec[i]))
				return 0, false
			}
			return int(v), true
		}
		rd := tlRound{line: line}
		if i := col["session_id"]; i < len(rec) && rec[i] != "" {
			rd.session = rec[i]
		} else {
			t.skip(line, "session_id", "missing")
			continue
		}
		var ok bool
		var in, wait int
		if rd.round, ok = get("round_idx"); !ok {
			continue
		}
		if rd.prefix, ok = get("prefix_len"); !ok {
			continue
		}
		if in, ok = get("input_len"); !ok {
			continue
		}
		if rd.out, ok = get("output_len"); !ok {
			continue
		}
		if wait, ok = get("tool_wait_after_ms"); !ok {
			continue
		}
		rd.in = rd.prefix + in
		if rd.in <= 0 || rd.in > MaxRoundTokens {
			t.skip(line, "input_len", fmt.Sprintf("a prompt of %d tokens: want 1 to %d", rd.in, MaxRoundTokens))
			continue
		}
		rd.wait, rd.hasWait = time.Duration(wait)*time.Millisecond, true
		out = append(out, rd)
	}
}

type tlJSON struct {
	Session *string `json:"session_id"`
	Round   *int    `json:"round_index"`
	In      *int    `json:"input_tokens_total"`
	Prefix  *int    `json:"prefix_tokens"`
	Out     *int    `json:"output_tokens"`
	Events  []struct {
		Timestamp string `json:"timestamp"`
	} `json:"timing_events"`
}

func (t *Trace) traceLabJSONL(r io.Reader) ([]tlRound, error) {
	var out []tlRound
	err := eachJSON(t, r, func(line int, j *tlJSON) {
		switch {
		case j.Session == nil:
			t.skip(line, "session_id", "missing")
			return
		case j.Round == nil:
			t.skip(line, "round_index", "missing")
			return
		case j.In == nil || *j.In <= 0 || *j.In > MaxRoundTokens:
			t.skip(line, "input_tokens_total", fmt.Sprintf("missing, ≤ 0 or above %d", MaxRoundTokens))
			return
		case j.Out == nil || *j.Out < 0:
			t.skip(line, "output_tokens", "missing or < 0")
			return
		}
		rd := tlRound{session: *j.Session, round: *j.Round, line: line, in: *j.In, out: *j.Out}
		if j.Prefix != nil {
			rd.prefix = min(max(*j.Prefix, 0), rd.in)
		}
		for k, e := range j.Events {
			ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
			if err != nil {
				t.skip(line, fmt.Sprintf("timing_events[%d].timestamp", k), err.Error())
				return
			}
			if !rd.timed || ts.Before(rd.start) {
				rd.start = ts
			}
			if !rd.timed || ts.After(rd.end) {
				rd.end = ts
			}
			rd.timed = true
		}
		out = append(out, rd)
	})
	return out, err
}

// traceLabSessions groups rounds into conversations, rounds in order,
// and builds their block ids: a round's first floor(prefix/64) blocks are
// the previous round's, the rest new.
func (t *Trace) traceLabSessions(rounds []tlRound) {
	sort.SliceStable(rounds, func(i, j int) bool {
		if rounds[i].session != rounds[j].session {
			return rounds[i].session < rounds[j].session
		}
		return rounds[i].round < rounds[j].round
	})
	var first time.Time
	for _, rd := range rounds {
		if rd.timed && (first.IsZero() || rd.start.Before(first)) {
			first = rd.start
		}
	}
	for i := 0; i < len(rounds); {
		j := i
		for j < len(rounds) && rounds[j].session == rounds[i].session {
			j++
		}
		rs := rounds[i:j]
		conv := &Conversation{ID: rs[0].session, Line: rs[0].line, BlockSize: TraceLabBlock}
		if rs[0].timed {
			conv.Start, conv.HasStart = rs[0].start.Sub(first), true
		}
		var prev []uint64
		next := uint64(1)
		var at time.Duration
		for k, rd := range rs {
			s := Step{In: rd.in, Out: max(rd.out, 1)}
			shared := min(rd.prefix/TraceLabBlock, len(prev))
			s.Hash = append(make([]uint64, 0, rd.in/TraceLabBlock), prev[:shared]...)
			for len(s.Hash) < rd.in/TraceLabBlock {
				s.Hash = append(s.Hash, next)
				next++
			}
			switch {
			case rd.timed && rs[0].timed:
				s.At = rd.start.Sub(rs[0].start)
				s.API, s.HasAPI = rd.end.Sub(rd.start), true
				if k > 0 && rs[k-1].timed {
					s.Think, s.HasThink = max(rd.start.Sub(rs[k-1].end), 0), true
				}
			case k > 0 && rs[k-1].hasWait:
				s.Think, s.HasThink = rs[k-1].wait, true
				at += s.Think
				s.At = at
			}
			prev = s.Hash
			conv.Root.Steps = append(conv.Root.Steps, s)
		}
		t.Requests += len(rs)
		t.Conversations = append(t.Conversations, conv)
		i = j
	}
}
