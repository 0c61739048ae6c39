package report

import (
	"fmt"
	"html/template"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// PlotAgentLanes is the swim-lane plot of a run's agentic conversations.
const PlotAgentLanes = "agent_lanes"

// maxLanes caps the rows the swim-lane plot draws (a conversation and
// each of its subagents a row).
const maxLanes = 24

// laneTicks labels the swim-lane rows.
type laneTicks []string

func (l laneTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for i, s := range l {
		t = append(t, plot.Tick{Value: -float64(i), Label: s})
	}
	return t
}

// agentLanes draws a row per conversation and per subagent of the
// summary's listed conversations (the first ones, up to maxLanes rows):
// each step a bar from its send to its last byte (prefill to its first
// token, then decoding), each tool wait a dashed line from a response to
// its branch's next send, and each subagent's spawn a thin line from its
// parent's row to its first step. "" without agentic conversations.
func agentLanes(ag *metrics.AgentsSummary) (template.HTML, int, error) {
	if ag == nil || len(ag.List) == 0 {
		return "", 0, nil
	}
	c := newPlot("Agentic conversations: steps, tool waits, subagents", "time since the run's start (s)", "")
	var labels laneTicks
	var prefill, decode, wait, spawn []plotter.XYs
	drawn := 0
	for _, conv := range ag.List {
		branches := 0
		for _, sp := range conv.Spans {
			branches = max(branches, int(sp[0]))
		}
		if len(labels)+branches+1 > maxLanes {
			break
		}
		drawn++
		row0 := len(labels)
		labels = append(labels, fmt.Sprintf("conv %d", conv.Session))
		for b := 1; b <= branches; b++ {
			labels = append(labels, fmt.Sprintf("  sub %d", b))
		}
		lastEnd := map[int]float64{}
		firstSent := map[int]float64{}
		// Spans are in the order steps finished: a branch's steps are in
		// order (a branch is sequential).
		for _, sp := range conv.Spans {
			b := int(sp[0])
			y := -float64(row0 + b)
			sent, first, end := sp[1], sp[2], sp[3]
			if first > 0 {
				prefill = append(prefill, plotter.XYs{{X: sent, Y: y}, {X: first, Y: y}})
				decode = append(decode, plotter.XYs{{X: first, Y: y}, {X: end, Y: y}})
			} else {
				decode = append(decode, plotter.XYs{{X: sent, Y: y}, {X: end, Y: y}})
			}
			if e, ok := lastEnd[b]; ok && sent > e {
				wait = append(wait, plotter.XYs{{X: e, Y: y}, {X: sent, Y: y}})
			}
			if _, ok := firstSent[b]; !ok {
				firstSent[b] = sent
			}
			lastEnd[b] = end
		}
		for b := 1; b <= branches; b++ {
			if t, ok := firstSent[b]; ok {
				spawn = append(spawn, plotter.XYs{{X: t, Y: -float64(row0)}, {X: t, Y: -float64(row0 + b)}})
			}
		}
	}
	c.Y.Tick.Marker = labels
	c.Y.Min, c.Y.Max = -float64(len(labels))+0.5, 0.5
	c.X.Min = 0
	add := func(segs []plotter.XYs, label string, i int, width vg.Length, dashed bool) error {
		for k, pts := range segs {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = palette[i%len(palette)]
			l.Width = width
			if dashed {
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			c.Add(l)
			if k == 0 {
				c.addKey(label, l)
			}
		}
		return nil
	}
	for _, s := range []struct {
		segs   []plotter.XYs
		label  string
		color  int
		width  vg.Length
		dashed bool
	}{
		{spawn, "subagent spawned", 3, vg.Points(0.6), false},
		{wait, "tool wait (response to next send)", 2, vg.Points(1), true},
		{prefill, "step: send to first token", 0, vg.Points(6), false},
		{decode, "step: first token to last byte", 1, vg.Points(6), false},
	} {
		if err := add(s.segs, s.label, s.color, s.width, s.dashed); err != nil {
			return "", 0, err
		}
	}
	svg, err := svgOf(c, PlotAgentLanes)
	return svg, drawn, err
}
