package metrics

import (
	"fmt"
	"time"
)

// KeyLengthsPart names the Lengths part (its state is merge_state.lengths).
const KeyLengthsPart = "lengths"

// Lengths keeps the prompt lengths of every request and the output lengths
// of the successful ones, for the summary's length histograms. It is a
// Part: its state is merge_state.lengths, each distribution in
// HistEncoding by name (input, output).
type Lengths struct {
	In, Out *LengthHist
}

var _ Part = (*Lengths)(nil)

// NewLengths returns empty length distributions.
func NewLengths() *Lengths { return &Lengths{In: NewLengthHist(), Out: NewLengthHist()} }

// Add implements Sink.
func (l *Lengths) Add(s *Sample) {
	l.In.Record(s.InputLen)
	if s.OK {
		l.Out.Record(s.OutputTokens)
	}
}

// Key implements Part.
func (l *Lengths) Key() string { return KeyLengthsPart }

// Finish implements Part: the summary's length_histograms (always set,
// without the empty distributions).
func (l *Lengths) Finish(s *Summary, _ time.Duration) {
	s.LengthHistograms = LengthHistograms(l.In, l.Out)
}

// byName are the distributions by their name in merge_state.lengths.
func (l *Lengths) byName() map[string]*LengthHist {
	return map[string]*LengthHist{"input": l.In, "output": l.Out}
}

// Save implements Part: the non-empty distributions.
func (l *Lengths) Save(st *MergeState) error {
	for k, h := range l.byName() {
		enc, err := h.State()
		if err != nil {
			return err
		}
		if enc != "" {
			if st.Lengths == nil {
				st.Lengths = map[string]string{}
			}
			st.Lengths[k] = enc
		}
	}
	return nil
}

// Load implements Part.
func (l *Lengths) Load(c *Copy) error {
	dsts := l.byName()
	for k, enc := range c.State.Lengths {
		h, err := LengthFromState(enc)
		if err != nil {
			return fmt.Errorf("%s.lengths.%s: %w", KeyMergeState, k, err)
		}
		dst := dsts[k]
		if dst == nil {
			return fmt.Errorf("%s.lengths.%s: want input or output", KeyMergeState, k)
		}
		dst.Merge(h)
	}
	return nil
}
