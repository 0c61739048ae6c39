package runner

import (
	"errors"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// ParametricOptions configures --mode parametric.
type ParametricOptions struct {
	GammaParamsCSV string
	ModelClass     string
}

// DefaultParametricOptions returns FineServe's parametric defaults.
func DefaultParametricOptions() ParametricOptions {
	return ParametricOptions{}
}

// parametricSchedule builds the schedule of --mode parametric.
func parametricSchedule(o *Options, seed uint64, log *logger) (arrival.Schedule, error) {
	return nil, usage(errors.New("--mode parametric is not supported yet"))
}
