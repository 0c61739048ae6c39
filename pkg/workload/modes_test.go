package workload

import (
	"strings"
	"testing"
)

// TestModeTable: every row is complete and found by its name, exactly one
// mode is rated (poisson) and one trace-driven (replay), and an unknown
// mode is refused with the table's names.
func TestModeTable(t *testing.T) {
	var rated, trace []string
	for _, m := range modeTable {
		if got, ok := LookupMode(m.Name); !ok || got != m || m.Help == "" || m.schedule == nil {
			t.Errorf("mode %q: lookup %v %v, help %q, schedule %v", m.Name, got, ok, m.Help, m.schedule != nil)
		}
		if !strings.Contains(ModeHelp(), m.Name+": ") || !strings.Contains(ModeNames(), m.Name) {
			t.Errorf("mode %q missing from the help %q or the names %q", m.Name, ModeHelp(), ModeNames())
		}
		if m.Rated {
			rated = append(rated, m.Name)
		}
		if m.Trace {
			trace = append(trace, m.Name)
		}
		if Rated(m.Name) != m.Rated {
			t.Errorf("Rated(%q) = %v", m.Name, Rated(m.Name))
		}
	}
	if strings.Join(rated, ",") != ModePoisson || strings.Join(trace, ",") != ModeReplay {
		t.Errorf("rated %v, trace %v", rated, trace)
	}
	if _, err := Build(Config{Spec: Spec{Mode: "poison"}}, nil); err == nil || !strings.Contains(err.Error(), ModeNames()) {
		t.Errorf("unknown mode: %v, want an error listing %s", err, ModeNames())
	}
}
