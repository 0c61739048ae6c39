package metrics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Targets are what a completed run must meet to pass: its error budget
// (--max-error-rate) and its goodput (--min-goodput of the --goodput SLO).
type Targets struct {
	// MaxErrorRate is the share of requests that may fail.
	MaxErrorRate float64
	// MinGoodput is the share of requests that must meet every SLO target
	// (0: not checked).
	MinGoodput float64
	// SLO are the --goodput targets (NoSLO: none).
	SLO SLO
}

// ReasonKind tells what a Reason is about.
type ReasonKind int

const (
	// ErrorBudget: more requests failed than --max-error-rate allows.
	ErrorBudget ReasonKind = iota
	// GoodputTarget: fewer requests met their SLO than --min-goodput asks.
	GoodputTarget
	// InternalError: requests failed with class internal (their work
	// panicked: a bug in the generator), whatever the error budget says.
	InternalError
)

// Reason is one reason a completed run does not pass, in one line.
type Reason struct {
	Kind ReasonKind
	Text string
}

// Verdict lists why a completed run does not pass, from its summary's
// figures: the targets it missed (error budget, then goodput), then the
// requests that hit an internal error. No reason: the run passed.
func Verdict(t Targets, sum *Summary) []Reason {
	var out []Reason
	if sum.ErrorRate > t.MaxErrorRate {
		out = append(out, Reason{ErrorBudget, fmt.Sprintf("error budget exceeded: %d of %d requests failed (error rate %.4f > --max-error-rate %g); by class: %s",
			sum.Failed, sum.Failed+sum.Completed, sum.ErrorRate, t.MaxErrorRate, classCounts(sum.ErrorsByClass))})
	}
	if t.MinGoodput > 0 && t.SLO.Set() {
		switch g := sum.Goodput; {
		case g == nil:
			out = append(out, Reason{GoodputTarget, "goodput target: the summary has no goodput_share"})
		case g.Share < t.MinGoodput:
			out = append(out, Reason{GoodputTarget, fmt.Sprintf("goodput target missed: %d of %d requests met every SLO (%s), share %.4f < --min-goodput %g",
				g.Requests, sum.Completed+sum.Failed, t.SLO, g.Share, t.MinGoodput)})
		}
	}
	if n := sum.ErrorsByClass[record.ErrInternal]; n > 0 {
		what := fmt.Sprintf("%d requests", n)
		if n == 1 {
			what = "1 request"
		}
		out = append(out, Reason{InternalError, fmt.Sprintf("%s hit an internal error (a bug in fineserve-gen: the stack is printed above; their records say error_class internal)", what)})
	}
	return out
}

// classCounts formats errors by class in report order.
func classCounts(m map[string]int64) string {
	var parts []string
	for _, c := range record.ErrorClasses {
		if n := m[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	for c, n := range m { // classes the client does not list (none today)
		if !slices.Contains(record.ErrorClasses, c) && n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}
