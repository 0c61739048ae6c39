package sweep

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
)

// maxResultBytes bounds a sweep file read back (a summary is tens of
// kilobytes; a sweep has at most a few dozen steps).
const maxResultBytes = 256 << 20

// Load reads a sweep's --sweep-json file.
func Load(path string) (*Result, error) {
	b, err := bounded.ReadFile(path, maxResultBytes)
	var tl *bounded.TooLarge
	if errors.As(err, &tl) {
		return nil, fmt.Errorf("%s: %w: larger than a sweep's JSON can be", path, err)
	}
	if err != nil {
		return nil, err // it names the file
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Variable == "" || r.Steps == nil {
		return nil, fmt.Errorf("%s: %w", path, errors.New("not a sweep's JSON (no variable or steps)"))
	}
	for i := range r.Steps {
		if r.Steps[i].Summary == nil {
			return nil, fmt.Errorf("%s: step %d has no summary", path, i+1)
		}
	}
	return &r, nil
}
