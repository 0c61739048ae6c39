package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
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
	// Note, when set, describes the sessions instead of Config (an
	// agentic trace's conversations).
	Note string
}

// Describe says in one line what sessions s plans.
func (s *Sessions) Describe() string {
	if s.Note != "" {
		return s.Note
	}
	return s.Config.Describe()
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
	head := session.PlanHeader
	if c.Sessions.Cancel != nil {
		head = session.PlanHeaderCancel
	}
	p.d.Write([]byte(head + "\n"))
	if c.SessionsOut != nil {
		p.out = newCSVOut(c.SessionsOut, head)
	}
	return p
}

func (p *planPass) add(a *arrival.Arrival, c *Config) {
	if p == nil {
		return
	}
	p.turns = p.cfg.Plan(p.turns, a)
	if p.cfg.Cancel != nil {
		p.line = session.AppendPlanRowsCancel(p.line[:0], a.Index, p.turns)
	} else {
		p.line = session.AppendPlanRows(p.line[:0], a.Index, p.turns)
	}
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
	if err := p.out.close(); err != nil {
		return fmt.Errorf("the sessions file: %w", err)
	}
	return nil
}

// loadConversations reads the dataset's conversations with --multi-turn
// and makes them the plan of each session: the session of index i follows
// the conversation whose first message its prompt is (i mod the dataset's
// size), its later user messages in order with their replies' lengths as
// max_tokens (--sharegpt-output-len overrides them).
func (w *Workload) loadConversations(c *Config, log Logger) error {
	if !c.MultiTurn {
		return nil
	}
	if c.DatasetPath == "" || c.DatasetName == "random" {
		return errors.New("--multi-turn: the conversations come from --dataset-path (a sharegpt or sharegpt_pre file)")
	}
	if c.Sessions.Turns.Set() || c.Sessions.TurnInput.Set() {
		return errors.New("--multi-turn: the dataset's conversations give the turns and their sizes: leave out --turns and --turn-input-len")
	}
	kind := c.DatasetName
	if kind == "" {
		kind = "sharegpt"
	}
	conv, err := prompt.LoadConversations(c.DatasetPath, kind)
	if err != nil {
		return err
	}
	if w.Dataset != nil && conv.Len() != w.Dataset.Len() {
		return fmt.Errorf("--multi-turn: %d conversations for %d prompts in %s", conv.Len(), w.Dataset.Len(), c.DatasetPath)
	}
	fixed := c.SharegptOutputLen
	c.Sessions.Script = func(i int64) []session.Turn {
		ex := conv.Of(i)
		out := make([]session.Turn, len(ex))
		for j, e := range ex {
			out[j] = session.Turn{Input: prompt.CountWords(e.User), Output: e.Reply}
			if fixed > 0 {
				out[j].Output = fixed
			}
		}
		return out
	}
	later := 0
	for _, ex := range conv.Later {
		later += len(ex)
	}
	log.Infof("dataset %s: %d conversations, %.2f turns on average", c.DatasetPath, conv.Len(), 1+float64(later)/float64(conv.Len()))
	w.Conversations = conv
	return nil
}
