package parametric

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

func readClient(t *testing.T, name string) *ServeGenClient {
	t.Helper()
	dir := filepath.Join("testdata", "servegen")
	tr, err := os.Open(filepath.Join(dir, name+"-trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ds, err := os.Open(filepath.Join(dir, name+"-dataset.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	c, err := ReadServeGenClient(name, tr, tr.Name(), ds, ds.Name())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeGenRead reads the two real clients: their windows, the active
// ones and the non-empty length windows.
func TestServeGenRead(t *testing.T) {
	lang := readClient(t, "language__m-small__chunk-15")
	reason := readClient(t, "reason__deepseek-r1__chunk-9")
	active := func(c *ServeGenClient) (n int, patterns []string) {
		for _, w := range c.Windows {
			if w.Pattern != "" {
				n++
				patterns = append(patterns, w.Pattern)
			}
		}
		return n, patterns
	}
	if n, _ := active(lang); len(lang.Windows) != 2016 || n != 13 || lang.Windows[412].Start != 247200 || lang.Windows[412].Size != 600 {
		t.Errorf("language: %d windows, %d active, window 412 %+v", len(lang.Windows), n, lang.Windows[412])
	}
	if n, p := active(reason); len(reason.Windows) != 144 || n != 2 || !slices.Equal(p, []string{"Weibull", "Gamma"}) {
		t.Errorf("reason: %d windows, %d active %v", len(reason.Windows), n, p)
	}
	// Only windows with both distributions count: the reason client's 21600
	// and 43200, the language client's eight.
	if len(reason.Lengths) != 2 || reason.Lengths[0].Start != 21600 || len(lang.Lengths) != 8 {
		t.Errorf("lengths: reason %d, language %d", len(reason.Lengths), len(lang.Lengths))
	}
	// The window at 54600 draws from the lengths of 43200.
	if l := reason.lengthsAt(54600); l.Start != 43200 || math.Abs(l.In[len(l.In)-1]-1) > 1e-12 {
		t.Errorf("lengths at 54600: from %g", l.Start)
	}
}

// client is a test client: nWin windows of 600 s, every other one idle
// when idle is set, at rate with pattern and shape, and lengths drawn from
// in {10, 20} and out {1, 3} (half each).
func client(name string, nWin int, rate float64, pattern string, shape float64, idle bool) *ServeGenClient {
	c := &ServeGenClient{Name: name}
	for i := range nWin {
		w := ServeGenWindow{Start: float64(600 * i), Size: 600, Rate: rate, Pattern: pattern, Shape: shape, Scale: 0.01}
		if idle && i%2 == 1 {
			w = ServeGenWindow{Start: float64(600 * i), Size: 600}
		}
		c.Windows = append(c.Windows, w)
	}
	in, _ := parsePDF("{10: 0.5, 20: 0.5}")
	out, _ := parsePDF("{1: 0.5, 3: 0.5}")
	c.Lengths = []ServeGenLengths{{Start: 0, In: in, Out: out}}
	return c
}

func collect(s arrival.Schedule) []arrival.Arrival {
	var out []arrival.Arrival
	for a := range s {
		out = append(out, a)
	}
	return out
}

// weibullCV is the CV of a Weibull of shape k.
func weibullCV(k float64) float64 {
	g1, g2 := math.Gamma(1+1/k), math.Gamma(1+2/k)
	return math.Sqrt(g2/(g1*g1) - 1)
}

// TestServeGenStatistics checks seeded schedules of single clients.
// Rate: each active window holds exactly ⌈r·600⌉ − 1 arrivals (ServeGen's
// normalization), so a client's rate over its active windows is r − 1/600
// exactly. CV of the gaps between consecutive arrivals inside a window,
// pooled over the windows, against the pattern's (Gamma: 1/√k; Weibull:
// √(Γ(1+2/k)/Γ(1+1/k)² − 1)): within 10 % for the bursty shapes (CV 2 and
// 2.24, heavy tails: 120,000 gaps) and 5 % for the regular ones. Over 5
// seeds each, so a tolerance that only one seed meets fails.
func TestServeGenStatistics(t *testing.T) {
	for _, c := range []struct {
		pattern string
		shape   float64
		rate    float64
		wantCV  float64
		tol     float64
	}{
		{"Gamma", 0.25, 20, 2, 0.10},
		{"Gamma", 2, 5, 1 / math.Sqrt2, 0.05},
		{"Weibull", 0.5, 20, weibullCV(0.5), 0.10},
		{"Weibull", 1.5, 5, weibullCV(1.5), 0.05},
	} {
		cl := client("c", 20, c.rate, c.pattern, c.shape, true) // 10 active windows
		for seed := range uint64(5) {
			arr := collect(ServeGenSchedule(ServeGenConfig{Clients: []*ServeGenClient{cl}, Seed: seed}))
			perWindow := int(math.Ceil(c.rate*600)) - 1
			if len(arr) != 10*perWindow {
				t.Fatalf("%s %g: %d arrivals, want %d", c.pattern, c.shape, len(arr), 10*perWindow)
			}
			var sum, sq float64
			var n int
			for i := 1; i < len(arr); i++ {
				if arr[i].At/(600*time.Second) != arr[i-1].At/(600*time.Second) {
					continue // a gap across windows (or the idle one between)
				}
				g := (arr[i].At - arr[i-1].At).Seconds()
				sum += g
				sq += g * g
				n++
			}
			mean := sum / float64(n)
			cv := math.Sqrt(sq/float64(n)-mean*mean) / mean
			if seed == 0 {
				t.Logf("%s shape %g: CV %.3f (want %.3f)", c.pattern, c.shape, cv, c.wantCV)
			}
			if math.Abs(cv/c.wantCV-1) > c.tol {
				t.Errorf("%s shape %g seed %d: CV %.3f, want %.3f ± %.0f %%", c.pattern, c.shape, seed, cv, c.wantCV, 100*c.tol)
			}
			// Idle windows stay silent.
			for _, a := range arr {
				if int(a.At/(600*time.Second))%2 == 1 {
					t.Fatalf("arrival at %v in an idle window", a.At)
				}
			}
		}
	}
}

// TestServeGenComposed: clients composed are the union of each one's own
// schedule (a client's draws do not depend on the others), merged in time
// order; the same seed gives the same schedule, another a different one;
// lengths come from the dataset, one uniform for both.
func TestServeGenComposed(t *testing.T) {
	a := client("a", 6, 3, "Gamma", 0.5, false)
	b := client("b", 6, 2, "Weibull", 0.7, true)
	// b's inputs are 30 or 40 tokens: its arrivals are told apart by them.
	bIn, _ := parsePDF("{30: 0.5, 40: 0.5}")
	b.Lengths[0].In = bIn
	cfg := ServeGenConfig{Clients: []*ServeGenClient{a, b}, Seed: 7}
	all := collect(ServeGenSchedule(cfg))
	onlyA := collect(ServeGenSchedule(ServeGenConfig{Clients: []*ServeGenClient{a}, Seed: 7}))
	onlyB := collect(ServeGenSchedule(ServeGenConfig{Clients: []*ServeGenClient{b}, Seed: 7}))
	if len(all) != len(onlyA)+len(onlyB) || len(onlyA) != 6*1799 || len(onlyB) != 3*1199 {
		t.Fatalf("%d = %d + %d?", len(all), len(onlyA), len(onlyB))
	}
	var times, union []time.Duration
	perClient := map[string]int{}
	for i, x := range all {
		if x.Index != int64(i) || x.Burst != x.Index || i > 0 && x.At < all[i-1].At {
			t.Fatalf("arrival %d: %+v", i, x)
		}
		times = append(times, x.At)
		switch {
		case x.InputTokens == 10 && x.OutputTokens == 1, x.InputTokens == 20 && x.OutputTokens == 3:
			perClient["a"]++
		case x.InputTokens == 30 && x.OutputTokens == 1, x.InputTokens == 40 && x.OutputTokens == 3:
			perClient["b"]++
		default:
			t.Fatalf("lengths %d, %d", x.InputTokens, x.OutputTokens)
		}
	}
	for _, x := range append(onlyA, onlyB...) {
		union = append(union, x.At)
	}
	// Each client's rate in the composed schedule: r − 1/600 over its
	// active windows (a: 3 req/s in 6 windows; b: 2 req/s in 3).
	if ra, rb := float64(perClient["a"])/3600, float64(perClient["b"])/1800; math.Abs(ra-(3-1.0/600)) > 1e-9 || math.Abs(rb-(2-1.0/600)) > 1e-9 {
		t.Errorf("rates in the composed schedule: a %.6f, b %.6f req/s", ra, rb)
	}
	slices.Sort(union)
	if !slices.Equal(times, union) {
		t.Error("the composed schedule is not the union of the clients'")
	}
	if again := collect(ServeGenSchedule(cfg)); !slices.EqualFunc(again, all, func(x, y arrival.Arrival) bool {
		return x.At == y.At && x.InputTokens == y.InputTokens && x.OutputTokens == y.OutputTokens
	}) {
		t.Error("same seed, different schedule")
	}
	cfg.Seed = 8
	if other := collect(ServeGenSchedule(cfg)); other[0].At == all[0].At {
		t.Error("another seed, the same first arrival")
	}
	short := 0
	for _, x := range all {
		if x.InputTokens == 10 || x.InputTokens == 30 {
			short++
		}
	}
	// Half the inputs are the short ones: ±0.02 is 4.8 standard errors of
	// 14,391 draws.
	if share := float64(short) / float64(len(all)); math.Abs(share-0.5) > 0.02 {
		t.Errorf("share of short inputs %.3f, want 0.5 ± 0.02", share)
	}
}

// TestServeGenLimits: --num-prompts, --duration, --time-scale, the repeat
// past one pass, leading idle windows and --servegen-skip-idle.
func TestServeGenLimits(t *testing.T) {
	a := client("a", 4, 1, "Gamma", 1, true) // active windows 0 and 2
	// A leading idle window: the schedule starts at the first active one.
	a.Windows = append([]ServeGenWindow{{Start: -600, Size: 600}}, a.Windows...)
	base := ServeGenConfig{Clients: []*ServeGenClient{a}, Seed: 1}
	one := collect(ServeGenSchedule(base))
	if len(one) != 2*599 || one[0].At > 10*time.Second || one[len(one)-1].At < 1200*time.Second || one[len(one)-1].At >= 1800*time.Second {
		t.Fatalf("one pass: %d arrivals, %v … %v", len(one), one[0].At, one[len(one)-1].At)
	}
	if start, pass := base.FirstActive(); start != 0 || pass != 2400 {
		t.Errorf("first active %g, pass %g", start, pass)
	}
	skip := base
	skip.SkipIdle = true
	if s := collect(ServeGenSchedule(skip)); len(s) != len(one) || s[len(s)-1].At >= 1200*time.Second {
		t.Errorf("skip idle: %d arrivals, last %v", len(s), s[len(s)-1].At)
	}
	c := base
	c.Count = 3000 // past one pass: the windows repeat
	if s := collect(ServeGenSchedule(c)); len(s) != 3000 || s[len(s)-1].At < 2400*time.Second {
		t.Errorf("count 3000: %d, last %v", len(s), s[len(s)-1].At)
	}
	c = base
	c.Duration = 700 * time.Second
	c.TimeScale = 2 // 1400 s of the windows
	s := collect(ServeGenSchedule(c))
	if len(s) < 700 || s[len(s)-1].At >= 700*time.Second {
		t.Errorf("duration 700 s at scale 2: %d, last %v", len(s), s[len(s)-1].At)
	}
	for i, x := range s[:599] {
		if x.At != one[i].At/2 && x.At != one[i].At/2+1 {
			t.Fatalf("scaled arrival %d at %v, unscaled %v", i, x.At, one[i].At)
		}
	}
}

func TestServeGenChoose(t *testing.T) {
	var cs []*ServeGenClient
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		cs = append(cs, client(n, 1, 1, "Gamma", 1, false))
	}
	names := func(cs []*ServeGenClient) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.Name)
		}
		return strings.Join(s, "")
	}
	got, _ := ChooseServeGenClients(cs, 0, 1)
	if names(got) != "abcde" {
		t.Errorf("all: %s", names(got))
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		x, _ := ChooseServeGenClients(cs, 2, seed)
		y, _ := ChooseServeGenClients(cs, 2, seed)
		if len(x) != 2 || names(x) != names(y) || x[0].Name >= x[1].Name {
			t.Fatalf("seed %d: %s, %s", seed, names(x), names(y))
		}
		seen[names(x)] = true
	}
	if len(seen) < 5 {
		t.Errorf("20 seeds chose only %v", seen)
	}
	if _, err := ChooseServeGenClients(cs, 6, 1); err == nil || !strings.Contains(err.Error(), "only 5 clients") {
		t.Errorf("err %v", err)
	}
}

func TestServeGenBadInput(t *testing.T) {
	ds := `{"0": {"input_tokens": "{5: 1.0}", "output_tokens": "{2: 1.0}"}}`
	for _, c := range []struct{ trace, dataset, want string }{
		{"0,1,1,Gamma,1\n", ds, "t.csv: line 1: 5 fields, want 6"},
		{"0,1,1,Gamma,1,1\n600,x,1,Gamma,1,1\n", ds, "t.csv: line 2: rate \"x\""},
		{"0,1,1,Poisson,1,1\n", ds, "pattern \"Poisson\""},
		{"0,1,1,Gamma,0,1\n", ds, "line 1: shape 0"},
		{"600,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", ds, "line 2: window start 0 not after the previous 600"},
		{"0,1,1,Gamma,1,1\n", `{"0": {"input_tokens": "{5: 1.0}"}}`, "d.json: 0: no output_tokens"},
		{"0,1,1,Gamma,1,1\n", `{"0": {"input_tokens": "{5 1.0}", "output_tokens": "{}"}}`, "input_tokens: item \"5 1.0\""},
		{"0,1,1,Gamma,1,1\n", `{"0": {"input_tokens": "{}", "output_tokens": "{}"}}`, "d.json: no window with both length distributions"},
	} {
		_, err := ReadServeGenClient("c", strings.NewReader(c.trace), "t.csv", strings.NewReader(c.dataset), "d.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.trace, err, c.want)
		}
	}
}

// TestServeGenTokenLimit: a draw above the limit is clamped to it.
func TestServeGenTokenLimit(t *testing.T) {
	a := client("a", 1, 2, "Gamma", 1, false)
	for _, x := range collect(ServeGenSchedule(ServeGenConfig{Clients: []*ServeGenClient{a}, Seed: 1, MaxTokens: 15})) {
		if !(x.InputTokens == 10 && x.OutputTokens == 1 || x.InputTokens == 14 && x.OutputTokens == 1) {
			t.Fatalf("lengths %d, %d", x.InputTokens, x.OutputTokens)
		}
	}
}

// FuzzParsePDF: any dict string parses to a CDF that rises to 1, or is
// refused; draws stay inside it.
func FuzzParsePDF(f *testing.F) {
	for _, s := range []string{"{}", "{144: 0.00011767474699929395, 145: 0.0004706989879971758}", "{1: 0.5, 2: 0.25, 3: 0.25}", "{0.0: 0.5, 0.5: 0.5}", "{5: 0}", "{-1: 1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cdf, err := parsePDF(s)
		if err != nil || cdf == nil {
			return
		}
		for i := range cdf {
			if cdf[i] < 0 || i > 0 && cdf[i] < cdf[i-1] {
				t.Fatalf("cdf %v", cdf)
			}
		}
		if math.Abs(cdf[len(cdf)-1]-1) > 1e-9 {
			t.Fatalf("cdf ends at %g", cdf[len(cdf)-1])
		}
		for _, u := range []float64{0, 0.5, 0.999999} {
			if v := draw(cdf, u); v < 1 || v > max(len(cdf)-1, 1) {
				t.Fatalf("draw(%g) = %d of %d", u, v, len(cdf))
			}
		}
	})
}
