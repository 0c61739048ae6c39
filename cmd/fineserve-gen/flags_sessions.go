package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// addSessionFlags declares the flags of multi-turn sessions
// (docs/SESSIONS.md).
func addSessionFlags(fs *pflag.FlagSet, o *options.Options) {
	s := &o.Sessions
	fs.Var(distValue{&s.Turns, session.Count}, "turns", "turns per session: N, uniform:A:B or geometric:MEAN (1: no sessions, every arrival is one request)")
	fs.Var(distValue{&s.Think, session.Duration}, "think-time", "between an answer's last byte and the next turn: 2s, exp:MEAN, uniform:A:B or lognormal:MEDIAN:SIGMA (default: none)")
	fs.Var(distValue{&s.TurnInput, session.Tokens}, "turn-input-len", "tokens of each user message after the first: N, uniform:A:B, geometric:MEAN or lognormal:MEDIAN:SIGMA (default: the first message's)")
	fs.IntVar(&o.MaxSessions, "max-sessions", o.MaxSessions, "most sessions live at once; session starts that find none free wait and keep their scheduled time (0: no bound)")
	fs.BoolVar(&o.ContinueOnError, "continue-on-error", o.ContinueOnError, "keep a session going after a failed turn (default: a failed turn ends its session)")
	fs.BoolVar(&o.MultiTurn, "multi-turn", o.MultiTurn, "with --dataset-path: sessions are the dataset's conversations, their user messages in order with their replies' lengths as max_tokens")
	fs.BoolVar(&o.ResponsesChain, "responses-chain", o.ResponsesChain, "--backend openai-responses: later turns send previous_response_id and their new messages only (the server must store responses; default: the whole history every turn)")
	fs.StringVar(&o.SessionsOut, "sessions-out", o.SessionsOut, "write the planned turns of every session as CSV ("+session.PlanHeader+")")
}

// distValue is a pflag.Value of a session distribution.
type distValue struct {
	d    *session.Dist
	unit session.Unit
}

func (v distValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v distValue) Set(s string) error {
	return setParsed(v.d, s, func(s string) (session.Dist, error) { return session.ParseDist(s, v.unit) })
}

func (v distValue) Type() string { return "dist" }
