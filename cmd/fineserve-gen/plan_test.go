package main

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
)

func TestPointFromSweep(t *testing.T) {
	k := 0.25
	step := func(v float64, verdict sweep.Verdict, ttft float64) sweep.Step {
		st := sweep.Step{Value: v, Verdict: verdict, Summary: &metrics.Summary{Burstiness: &k}}
		st.Figures.TTFT.P50, st.Figures.TPOT.P50 = ttft, 5
		return st
	}
	r := &sweep.Result{Variable: sweep.Rate, Capacity: &sweep.Answer{Value: 40, Rate: 38.5},
		Steps: []sweep.Step{step(20, sweep.Pass, 21), step(40, sweep.Pass, 30), step(80, sweep.Fail, 90)}}
	p, ttft, tpot, err := pointFromSweep(r, "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.CV != 2 || p.Rate != 38.5 || ttft != 21 || tpot != 5 || p.Source != "s.json" {
		t.Errorf("point %+v, TTFT %g, TPOT %g", p, ttft, tpot)
	}
	r.Variable = sweep.TimeScale
	if _, _, _, err := pointFromSweep(r, "s.json"); err == nil || !strings.Contains(err.Error(), "rate sweeps") {
		t.Errorf("time-scale sweep: %v", err)
	}
	r.Variable, r.Capacity = sweep.Rate, nil
	if _, _, _, err := pointFromSweep(r, "s.json"); err == nil || !strings.Contains(err.Error(), "no step met") {
		t.Errorf("no capacity: %v", err)
	}
}
