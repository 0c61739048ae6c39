package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// Sessions is what is known about the planned sessions of a workload: the
// plan itself is recomputed per session from the seed (session.Config.Plan),
// so nothing is kept per session.
type Sessions struct {
	// Config plans each session's turns.
	Config session.Config
	// Sessions and Turns count this shard's sessions and their planned
	// turns; Input totals the planned new-message tokens of every turn.
	Sessions, Turns, Input int64
	// Hash is "sha256:" and the SHA-256 of the whole (unsharded) plan's
	// CSV as --sessions-out writes it, header included.
	Hash string
}

// planPass plans every session during the workload's one pass: it hashes
// the whole plan and writes this shard's rows.
type planPass struct {
	cfg   *session.Config
	turns []session.Turn
	line  []byte
	d     hash.Hash
	out   *csvOut
	s     Sessions
}

// newPlanPass returns nil when c plans no sessions (every method of a nil
// pass does nothing), so a run without sessions does no work here.
func newPlanPass(c *Config) *planPass {
	if !c.Sessions.On() {
		return nil
	}
	p := &planPass{cfg: &c.Sessions, d: sha256.New()}
	p.d.Write([]byte(session.PlanHeader + "\n"))
	if c.SessionsOut != nil {
		p.out = &csvOut{w: c.SessionsOut, buf: append(make([]byte, 0, 1<<16), session.PlanHeader+"\n"...)}
	}
	return p
}

func (p *planPass) add(a *arrival.Arrival, c *Config) {
	if p == nil {
		return
	}
	p.turns = p.cfg.Plan(p.turns, a)
	p.line = session.AppendPlanRows(p.line[:0], a.Index, p.turns)
	p.d.Write(p.line)
	if c.ShardCount > 1 && a.Index%c.ShardCount != c.ShardIndex {
		return
	}
	p.s.Sessions++
	p.s.Turns += int64(len(p.turns))
	for _, t := range p.turns {
		p.s.Input += int64(t.Input)
	}
	p.out.write(p.line)
}

func (p *planPass) finish() *Sessions {
	if p == nil {
		return nil
	}
	p.s.Config = *p.cfg
	p.s.Hash = "sha256:" + hex.EncodeToString(p.d.Sum(nil))
	return &p.s
}

func (p *planPass) closeOut() error {
	if p == nil {
		return nil
	}
	return p.out.close()
}
