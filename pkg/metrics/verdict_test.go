package metrics

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestVerdict: the verdict reads the summary's figures against the
// targets: the error budget, the goodput share (only with --min-goodput
// and --goodput), and internal errors whatever the budget.
func TestVerdict(t *testing.T) {
	slo, err := ParseSLO([]string{"ttft:100"})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(failed int64, good *GoodputSummary, internal int64) *Summary {
		s := &Summary{Completed: 10 - failed, Failed: failed, ErrorRate: float64(failed) / 10, Goodput: good,
			ErrorsByClass: map[string]int64{}}
		if failed > internal {
			s.ErrorsByClass[record.ErrorClasses[0]] = failed - internal
		}
		if internal > 0 {
			s.ErrorsByClass[record.ErrInternal] = internal
		}
		return s
	}
	for _, tc := range []struct {
		name string
		t    Targets
		s    *Summary
		want []ReasonKind
		says []string
	}{
		{"within budget", Targets{MaxErrorRate: 0.2}, sum(2, nil, 0), nil, nil},
		{"over budget", Targets{MaxErrorRate: 0.1}, sum(2, nil, 0), []ReasonKind{ErrorBudget},
			[]string{"error budget exceeded: 2 of 10 requests failed (error rate 0.2000 > --max-error-rate 0.1)"}},
		{"goodput met", Targets{MaxErrorRate: 1, MinGoodput: 0.5, SLO: slo}, sum(0, &GoodputSummary{Share: 0.5, Requests: 5}, 0), nil, nil},
		{"goodput missed", Targets{MaxErrorRate: 1, MinGoodput: 0.5, SLO: slo}, sum(0, &GoodputSummary{Share: 0.4, Requests: 4}, 0),
			[]ReasonKind{GoodputTarget}, []string{"goodput target missed: 4 of 10 requests met every SLO (ttft:100), share 0.4000 < --min-goodput 0.5"}},
		{"goodput not measured", Targets{MaxErrorRate: 1, MinGoodput: 0.5, SLO: slo}, sum(0, nil, 0),
			[]ReasonKind{GoodputTarget}, []string{"the summary has no goodput_share"}},
		{"goodput not checked without --min-goodput", Targets{MaxErrorRate: 1, SLO: slo}, sum(0, &GoodputSummary{}, 0), nil, nil},
		{"internal within budget", Targets{MaxErrorRate: 1}, sum(1, nil, 1), []ReasonKind{InternalError}, []string{"1 request hit an internal error"}},
		{"everything", Targets{MaxErrorRate: 0, MinGoodput: 0.9, SLO: slo}, sum(3, &GoodputSummary{Share: 0.1, Requests: 1}, 2),
			[]ReasonKind{ErrorBudget, GoodputTarget, InternalError}, []string{"by class: ", "share 0.1000", "2 requests hit an internal error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Verdict(tc.t, tc.s)
			if len(got) != len(tc.want) {
				t.Fatalf("reasons %+v, want kinds %v", got, tc.want)
			}
			for i, r := range got {
				if r.Kind != tc.want[i] || !strings.Contains(r.Text, tc.says[i]) {
					t.Errorf("reason %d: %+v, want kind %v saying %q", i, r, tc.want[i], tc.says[i])
				}
			}
		})
	}
}
