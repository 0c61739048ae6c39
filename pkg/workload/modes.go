package workload

import (
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Modes: the --mode names of the table's rows. Code outside this file reads
// a row's fields (Mode), never compares these names.
const (
	ModePoisson    = "poisson"
	ModeReplay     = "replay"
	ModeParametric = "parametric"
)

// Mode is one way of building a schedule: a row of the mode table. What
// differs between modeTable — how the schedule is built, what sets its load,
// where its arrivals come from — is a field of its row; options, the
// workload and the sweep read the row.
type Mode struct {
	// Name is the --mode value.
	Name string
	// Help describes the row in --mode's help.
	Help string
	// Rated: the load is a rate of its own (--request-rate, --stages and
	// ramps set it in requests per second). Otherwise the schedule has a
	// shape of its own, and --time-scale (or --stages, as a multiplier)
	// sets its speed.
	Rated bool
	// Trace: the arrivals — times, lengths, models — come from a trace
	// file (--lengths does not apply; the trace names its models).
	Trace bool
	// schedule builds the mode's schedule (before routing, balancing and
	// cancellation).
	schedule func(c *Config, w *Workload, log Logger) (arrival.Schedule, error)
}

// modeTable is the table, in --mode's help order.
var modeTable = []*Mode{
	{Name: ModePoisson, Help: "synthetic arrivals at --request-rate (Poisson, or Gamma with --burstiness)", Rated: true,
		schedule: func(c *Config, w *Workload, log Logger) (arrival.Schedule, error) {
			return poissonSchedule(c, w.Dataset, log)
		}},
	{Name: ModeReplay, Help: "a trace's own arrivals (--request-trace-csv), scaled by --time-scale", Trace: true,
		schedule: func(c *Config, w *Workload, log Logger) (arrival.Schedule, error) {
			return replaySchedule(c, c.Seed, log, w)
		}},
	{Name: ModeParametric, Help: "Gamma windows and NB micro-bursts (--model-class or --gamma-params-csv), or ServeGen clients (--servegen)",
		schedule: func(c *Config, _ *Workload, log Logger) (arrival.Schedule, error) {
			return parametricSchedule(c, c.Seed, log)
		}},
}

// LookupMode returns the row named name.
func LookupMode(name string) (*Mode, bool) {
	for _, m := range modeTable {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// ModeNames lists the --mode values for messages: "a, b or c".
func ModeNames() string {
	return api.OrList(modeTable, func(m *Mode) string { return m.Name })
}

// ModeHelp is --mode's help text, from the table.
func ModeHelp() string {
	parts := make([]string, len(modeTable))
	for i, m := range modeTable {
		parts[i] = m.Name + ": " + m.Help
	}
	return strings.Join(parts, "; ")
}

// Rated reports whether mode name's load is a rate of its own (false for
// an unknown name).
func Rated(name string) bool {
	m, ok := LookupMode(name)
	return ok && m.Rated
}
