package runner

import (
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestRecordingPanicIsARecord: a result whose recording panics (here an
// observer) is counted again as an internal error, and the others are not
// lost.
func TestRecordingPanicIsARecord(t *testing.T) {
	results, _, path, collected := startCollect(t, metrics.SinkFunc(func(s *metrics.Sample) {
		if s.Index == 1 && s.OK {
			panic("observer bug")
		}
	}))
	for i := range int64(3) {
		results <- finishedResult(i)
	}
	close(results)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Index      int64  `json:"index"`
		ErrorClass string `json:"error_class"`
		Error      string `json:"error"`
	}
	recs := testenv.ReadJSONL[rec](t, path)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if got, want := r.ErrorClass != "", r.Index == 1; got != want {
			t.Errorf("record %d: class %q error %q", r.Index, r.ErrorClass, r.Error)
		}
	}
}
