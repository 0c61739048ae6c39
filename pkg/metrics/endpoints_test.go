package metrics

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestEndpointsMergeIsExact: two halves of a run, each through its merge
// state, merge to the figures of the whole.
func TestEndpointsMergeIsExact(t *testing.T) {
	urls := []string{"http://a:1", "http://b:2"}
	whole, halves := NewEndpoints(urls), [2]*Endpoints{NewEndpoints(urls), NewEndpoints(urls)}
	for i := 0; i < 200; i++ {
		s := Sample{Request: record.Request{Index: int64(i), InputLen: 8}, Endpoint: i % 2, OK: i%7 != 0, HasE2E: true, HasTTFT: true, E2E: time.Duration(1+i*13%97) * time.Millisecond, TTFT: time.Duration(1+i*7%31) * time.Millisecond, OutputTokens: 4}
		if !s.OK {
			s.ErrorClass, s.HasE2E, s.HasTTFT = "connect", false, false
		}
		whole.Add(&s)
		halves[i%3%2].Add(&s)
	}
	var merged *Endpoints
	for _, h := range halves {
		e := throughState(t, h.State, EndpointsFromState)
		if merged == nil {
			merged = e
		} else if err := merged.Merge(e); err != nil {
			t.Fatal(err)
		}
	}
	got, want := merged.Summary(time.Second), whole.Summary(time.Second)
	// Counts and quantiles are exact; means agree to rounding (Welford's
	// moments combined in another order).
	for i := range got {
		for _, m := range [][2]*float64{{&got[i].MeanTTFT, &want[i].MeanTTFT}, {&got[i].MeanE2E, &want[i].MeanE2E}} {
			if math.Abs(*m[0]-*m[1]) > 1e-9**m[1] {
				t.Errorf("endpoint %d: mean %v merged, %v whole", i, *m[0], *m[1])
			}
			*m[0] = *m[1]
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged\n%+v\nwhole\n%+v", got, want)
	}
	if want[0].Failed+want[1].Failed == 0 || want[0].ErrorsByClass["connect"] != want[0].Failed {
		t.Fatalf("no failures counted by class: %+v", want)
	}
	if err := merged.Merge(NewEndpoints([]string{"http://a:1"})); err == nil {
		t.Fatal("merging a breakdown of other endpoints: no error")
	}
}
