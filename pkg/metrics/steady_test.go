package metrics

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestSteadyWindowRule: requests sent every 100 ms (0 to 3.9 s), each
// lasting 450 ms, run 5 in flight for the first 50 ms after each send and
// 4 for the next 50 ms. The level over the second half of the sends,
// 1.95–3.9 s, is (50 ms·4 + 19·(50 ms·5 + 50 ms·4)) / 1950 ms = 8750/1950;
// 0.9 of it, 4.04, is first reached by the fifth send (0.4 s: five in
// flight, none ended yet): the window runs from there to the last send.
func TestSteadyWindowRule(t *testing.T) {
	ms := time.Millisecond
	var spans [][2]time.Duration
	for i := range 40 {
		s := time.Duration(i) * 100 * ms
		spans = append(spans, [2]time.Duration{s, s + 450*ms})
	}
	start, end, level, ok := SteadyWindow(spans)
	if !ok || start != 400*ms || end != 3900*ms || math.Abs(level-8750.0/1950) > 1e-9 {
		t.Errorf("window %v–%v level %v ok %v, want 400ms–3.9s level %v", start, end, level, ok, 8750.0/1950)
	}
	if _, _, _, ok := SteadyWindow(spans[:1]); ok {
		t.Error("one request: a window")
	}
	// Everything sent at once: no time between first and last send.
	if _, _, _, ok := SteadyWindow([][2]time.Duration{{0, ms}, {0, 2 * ms}}); ok {
		t.Error("every request at one instant: a window")
	}
}

// TestSteadyStatePartFigures: the part's figures are those of the
// requests sent within the window, and its throughput that of the
// requests ending in it.
func TestSteadyStatePartFigures(t *testing.T) {
	p := NewSteadyState(SteadyConfig{Rule: "fixed", Start: time.Second, End: 3 * time.Second})
	for i := range 5 { // sent at 0, 1, 2, 3, 4 s; TTFT (i+1)·10 ms; 1 s long
		var s Sample
		s.Sent = time.Duration(i) * time.Second
		s.End = s.Sent + time.Second
		s.HasLag, s.OK, s.HasE2E, s.HasTTFT = true, true, true, true
		s.E2E, s.TTFT, s.OutputTokens = time.Second, time.Duration(i+1)*10*time.Millisecond, 10
		p.Add(&s)
	}
	var sum Summary
	p.Finish(&sum, 0)
	ss := sum.SteadyState
	if ss == nil || ss.Requests != 3 || ss.Figures["mean_ttft_ms"] != 30 || ss.Figures["request_throughput"] != 1 || ss.Figures["output_throughput"] != 10 {
		t.Fatalf("steady state %+v, want requests 2–4 (sent at 1–3 s), mean TTFT 30 ms, 2 ending in the window over 2 s", ss)
	}
	b, err := json.Marshal(ss)
	if err != nil {
		t.Fatal(err)
	}
	var back SteadyStateSummary
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, ss) {
		t.Errorf("round trip %s → %+v (%v), want %+v", b, back, err, ss)
	}
	off := NewSteadyState(SteadyConfig{Rule: SteadyOff})
	off.Add(&Sample{})
	var none Summary
	off.Finish(&none, 0)
	if none.SteadyState != nil {
		t.Error("--steady-state off wrote a section")
	}
}

func TestParseSteady(t *testing.T) {
	if c, err := ParseSteady("10:50.5"); err != nil || c.Start != 10*time.Second || c.End != 50500*time.Millisecond {
		t.Errorf("ParseSteady(10:50.5) = %+v, %v", c, err)
	}
	for _, bad := range []string{"on", "50:10", "-1:5", "a:b", "5"} {
		if _, err := ParseSteady(bad); err == nil {
			t.Errorf("ParseSteady(%q): no error", bad)
		}
	}
}

// TestFiguresAreTheJSONNumbers: Figures holds exactly the numeric keys of
// the summary's JSON form with their values, and SetFigure sets what the
// JSON then writes.
func TestFiguresAreTheJSONNumbers(t *testing.T) {
	s := fullSummary()
	s.RequestThroughput, s.Completed = 12.5, 7
	s.TTFT = Dist{Count: 3, Mean: 10, Median: 9, P99: 30, Max: 31}
	s.E2E = Dist{Count: 3, Mean: 20, Median: 19, P99: 50, Max: 51}
	m := jsonObject(t, s)
	want := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			want[k] = f
		}
	}
	if got := s.Figures(); !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: Figures %v, JSON %v", k, got[k], v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: Figures %v, not a JSON number", k, v)
			}
		}
	}
	keys := FigureKeys()
	for k := range want {
		if _, ok := slices.BinarySearch(keys, k); !ok {
			t.Errorf("%s: not in FigureKeys", k)
		}
	}
	for k, v := range map[string]float64{"p99_ttft_ms": 42, "request_throughput": 3.5, "completed": 9, "goodput_share": 0.5, "mean_e2el_ms": 17} {
		if !s.SetFigure(k, v) || s.Figures()[k] != v {
			t.Errorf("SetFigure(%s, %v): Figures says %v", k, v, s.Figures()[k])
		}
	}
	if s.SetFigure("backend", 1) {
		t.Error("SetFigure of a string key")
	}
}

// TestSteadyStateEveryKeyRoundTrips: each of the section's own keys reads
// back into its field, the rest into Figures; a key of the wrong type is
// refused by name.
func TestSteadyStateEveryKeyRoundTrips(t *testing.T) {
	ss := &SteadyStateSummary{Rule: SteadyAuto, StartS: 2.5, EndS: 9, InFlightLevel: 7.25, Requests: 40,
		Note: "a note", Figures: map[string]float64{"mean_ttft_ms": 12, "request_throughput": 3}}
	if back, _ := testenv.RoundTrip(t, ss); !reflect.DeepEqual(back, ss) {
		t.Errorf("round trip %+v, want %+v", back, ss)
	}
	for _, k := range []string{"rule", "note", "start_s", "end_s", "in_flight_level", "requests", "mean_ttft_ms"} {
		var back SteadyStateSummary
		bad := `{"` + k + `":{}}`
		if err := json.Unmarshal([]byte(bad), &back); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s: error %v, want one naming %s", bad, err, k)
		}
	}
}
