package runner

import (
	"errors"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// ReplayOptions configures --mode replay.
type ReplayOptions struct {
	TracePath          string // --request-trace-csv / --trace
	TraceFormat        string // "" detects from the header
	TimestampColumn    string
	InputLengthColumn  string
	OutputLengthColumn string
	TimestampUnit      string // s, ms, us, ns, datetime; "" per format
	Strict             bool
}

// DefaultReplayOptions returns FineServe's replay defaults.
func DefaultReplayOptions() ReplayOptions {
	return ReplayOptions{}
}

// replaySchedule builds the schedule of --mode replay.
func replaySchedule(o *Options, seed uint64, log *logger) (arrival.Schedule, error) {
	return nil, usage(errors.New("--mode replay is not supported yet"))
}
