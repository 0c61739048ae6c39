// Package session plans multi-turn sessions: how many turns each session
// has, the think time before each later turn and its message's size —
// pure and seeded, per session — and keeps a live session's history.
package session

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// MaxTurns caps the turns of one session (a geometric or lognormal draw is
// unbounded): the per-turn summary keeps one entry per turn index.
const MaxTurns = 256

// streamSessions is the random stream of session plans, apart from every
// stream the schedule draws from, so turning sessions on never moves an
// arrival or changes its size.
const streamSessions uint64 = 0x5e5510a5

// Config is how sessions are planned. The zero value (or Turns "1") is a
// run without sessions: every arrival is one request.
type Config struct {
	// Turns is the number of turns per session (--turns).
	Turns Dist
	// Think is the time between receiving an answer and sending the next
	// turn (--think-time; unset: no think time).
	Think Dist
	// TurnInput is the size of each user message after the first
	// (--turn-input-len; unset: the session's first message's size).
	TurnInput Dist
	// Seed is the run's seed.
	Seed uint64
	// Script, when set, gives each session's later turns from a dataset's
	// conversations (--multi-turn) instead of Turns and TurnInput: the
	// sizes of the user messages and replies after the first, for the
	// session of index i. Think still applies.
	Script func(i int64) []Turn
	// Cancel, when set, decides which later turns the client cancels
	// (--cancel-share, --cancel-after): how long after its first send the
	// turn-th turn of session index is cut, 0 for none. The first turn's
	// cut is its arrival's CancelAfter.
	Cancel func(index int64, turn int) time.Duration
}

// On reports whether c plans sessions of more than one turn.
func (c *Config) On() bool {
	return c.Script != nil || c.Turns.Set() && !(c.Turns.Kind == "const" && c.Turns.A <= 1)
}

// Validate checks the units of c's distributions.
func (c *Config) Validate() error {
	var errs []error
	if c.Turns.Set() && c.Turns.Unit != Count {
		errs = append(errs, errors.New("--turns: want a count"))
	}
	if c.Think.Set() && c.Think.Unit != Duration {
		errs = append(errs, errors.New("--think-time: want a duration"))
	}
	if c.TurnInput.Set() && c.TurnInput.Unit != Tokens {
		errs = append(errs, errors.New("--turn-input-len: want a token count"))
	}
	return errors.Join(errs...)
}

// Turn is one planned turn of a session.
type Turn struct {
	// Think is the time between the previous turn's last byte and this
	// turn's due time (0 for the first turn).
	Think time.Duration
	// Input is the size of the turn's new user message, Output the
	// completion it asks for.
	Input, Output int
	// CancelAfter, when > 0, is when the client cuts the turn after its
	// first send; a cut turn ends its session (the user gave up).
	CancelAfter time.Duration
}

// Plan returns the turns planned for the session that starts with a: the
// first turn is a itself, later turns draw their think time and message
// size. It depends only on c and a (its Index and sizes), so every copy of
// a sharded run plans the same session, in any order. dst is reused.
func (c *Config) Plan(dst []Turn, a *arrival.Arrival) []Turn {
	dst = append(dst[:0], Turn{Input: max(a.InputTokens, 1), Output: max(a.OutputTokens, 1), CancelAfter: a.CancelAfter})
	if !c.On() {
		return dst
	}
	defer c.cancelTurns(dst, a.Index)
	r := c.rand(a.Index)
	if c.Script != nil {
		for _, t := range c.Script(a.Index) {
			if len(dst) == MaxTurns {
				break
			}
			if c.Think.Set() {
				t.Think = arrival.Seconds(c.Think.Draw(r))
			}
			dst = append(dst, Turn{Think: t.Think, Input: max(t.Input, 1), Output: max(t.Output, 1)})
		}
		return dst
	}
	n := min(int(c.Turns.Draw(r)), MaxTurns)
	for range n - 1 {
		t := Turn{Input: dst[0].Input, Output: dst[0].Output}
		if c.Think.Set() {
			t.Think = arrival.Seconds(c.Think.Draw(r))
		}
		if c.TurnInput.Set() {
			t.Input = int(c.TurnInput.Draw(r))
		}
		dst = append(dst, t)
	}
	return dst
}

// cancelTurns decides the cuts of the later turns of session index (the
// decisions have a random stream of their own: the turns' think times and
// sizes are those of a run without cancellation).
func (c *Config) cancelTurns(turns []Turn, index int64) {
	if c.Cancel == nil {
		return
	}
	for k := 1; k < len(turns); k++ {
		turns[k].CancelAfter = c.Cancel(index, k+1)
	}
}

// rand is the random source of session index.
func (c *Config) rand(index int64) *rand.Rand {
	return rand.New(rand.NewPCG(c.Seed^bits.RotateLeft64(streamSessions, 17), uint64(index)^streamSessions))
}

// PlanHeader is the header of the sessions CSV (--sessions-out): one row
// per planned turn.
const PlanHeader = "session,turn,think_s,input_len,output_len"

// PlanHeaderCancel is the sessions CSV's header when cancellation is on:
// each turn's cut (seconds after its first send; 0: not cancelled) is the
// last column.
const PlanHeaderCancel = PlanHeader + ",cancel_after_s"

// AppendPlanRows appends the CSV rows of a session's planned turns.
func AppendPlanRows(b []byte, session int64, turns []Turn) []byte {
	return appendPlanRows(b, session, turns, false)
}

// AppendPlanRowsCancel appends the rows of PlanHeaderCancel.
func AppendPlanRowsCancel(b []byte, session int64, turns []Turn) []byte {
	return appendPlanRows(b, session, turns, true)
}

func appendPlanRows(b []byte, session int64, turns []Turn, cancel bool) []byte {
	for i, t := range turns {
		b = strconv.AppendInt(b, session, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, t.Think.Seconds(), 'f', 6, 64)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(t.Input), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(t.Output), 10)
		if cancel {
			b = append(b, ',')
			b = strconv.AppendFloat(b, t.CancelAfter.Seconds(), 'f', 6, 64)
		}
		b = append(b, '\n')
	}
	return b
}

// Describe says in one line what sessions c plans.
func (c *Config) Describe() string {
	s := fmt.Sprintf("sessions: %s turns (mean %.2f)", c.Turns, c.Turns.Mean())
	if c.Script != nil {
		s = "sessions: the dataset's conversations"
	}
	if c.Think.Set() {
		s += fmt.Sprintf(", think time %s (mean %.3f s)", c.Think, c.Think.Mean())
	}
	if c.TurnInput.Set() {
		s += fmt.Sprintf(", later messages of %s tokens", c.TurnInput)
	}
	return s
}
