package options

import (
	"fmt"
	"strconv"

	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// Logger takes a run's notes and warnings.
type Logger = workload.Logger

// ParsePrewarm reads --prewarm-connections: "" (none), auto (as many as
// the run needs: auto is true) or a count ≥ 0.
func ParsePrewarm(s string) (n int, auto bool, err error) {
	switch s {
	case "":
		return 0, false, nil
	case "auto":
		return 0, true, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%q: want a number of connections ≥ 0 or auto", s)
	}
	return n, false, nil
}
