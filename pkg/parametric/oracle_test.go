package parametric

import (
	"math"
	"sort"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// The slow oracle: the schedule of a Config computed the obvious way. It
// materialises every window, event and request in slices, finds each event's
// window by a linear scan, maps the paused process clock to wall time by
// summing window lengths, sorts all requests at the end and only then cuts
// and numbers them. It shares no code with the generator, only the random
// streams (same stream ids, drawn in the same order for the same purpose).

type oracleWindow struct {
	start, end     float64 // wall seconds, unscaled
	aStart, aEnd   float64 // on the process clock
	shape, scaleMS float64
}

type oracleRequest struct {
	wall  float64
	event int
	j     int
}

func oracleWindows(c Config, table *Table, window time.Duration, ext Extension, jitter float64, upTo float64) []oracleWindow {
	rows := table.Rows
	n := len(rows)
	// Slots of one pass.
	starts, ends := make([]float64, n), make([]float64, n)
	for i, r := range rows {
		if table.Bounds {
			starts[i] = (r.StartMS - rows[0].StartMS) / 1000
			ends[i] = (r.EndMS - rows[0].StartMS) / 1000
		} else {
			starts[i] = float64(i) * window.Seconds()
			ends[i] = float64(i+1) * window.Seconds()
		}
	}
	period := ends[n-1]
	// Lognormal fit.
	ls, lc := make([]float64, n), make([]float64, n)
	for i, r := range rows {
		ls[i], lc[i] = math.Log(r.Shape), math.Log(r.ScaleMS)
	}
	m1, m2 := stat.Mean(ls, nil), stat.Mean(lc, nil)
	var a, b, d float64
	if n > 1 {
		a = math.Sqrt(stat.Variance(ls, nil))
		if a > 0 {
			b = stat.Covariance(ls, lc, nil) / a
		}
		d = math.Sqrt(math.Max(stat.Variance(lc, nil)-b*b, 0))
	}
	params := arrival.Rand(c.Seed, arrival.StreamParams)
	var out []oracleWindow
	active := 0.0
	for i := 0; ; i++ {
		pass, row := i/n, i%n
		w := oracleWindow{
			start: float64(pass)*period + starts[row],
			end:   float64(pass)*period + ends[row],
		}
		w.aStart = active
		w.aEnd = active + (w.end - w.start)
		active = w.aEnd
		r := rows[row]
		switch {
		case pass == 0:
			w.shape, w.scaleMS = r.Shape, r.ScaleMS
		case ext == RepeatJitter:
			w.shape = r.Shape * (1 + jitter*(2*params.Float64()-1))
			w.scaleMS = r.ScaleMS * (1 + jitter*(2*params.Float64()-1))
		default:
			z1, z2 := params.NormFloat64(), params.NormFloat64()
			w.shape = math.Exp(m1 + a*z1)
			w.scaleMS = math.Exp(m2 + b*z1 + d*z2)
		}
		out = append(out, w)
		if w.start > upTo {
			return out
		}
	}
}

// slowSchedule returns the schedule of c, built from table the slow way.
// upTo bounds the wall time (unscaled seconds) the oracle explores.
func slowSchedule(c Config, table *Table, window time.Duration, ext Extension, jitter float64, upTo float64) []arrival.Arrival {
	scale := c.TimeScale
	if scale == 0 {
		scale = 1
	}
	horizon := upTo
	if c.Count <= 0 && c.Duration <= 0 { // one pass: up to the end of the last row
		last := table.Rows[len(table.Rows)-1]
		if table.Bounds {
			horizon = (last.EndMS - table.Rows[0].StartMS) / 1000
		} else {
			horizon = float64(len(table.Rows)) * window.Seconds()
		}
	}
	if c.Duration > 0 {
		horizon = math.Min(horizon, c.Duration.Seconds()*scale+1) // requests are cut exactly below
	}
	wins := oracleWindows(c, table, window, ext, jitter, horizon)
	ek := 1.0
	if c.NB != nil {
		p0 := math.Pow(1+c.NB.Alpha*c.NB.Mu, -1/c.NB.Alpha)
		if c.NB.Alpha == 0 {
			p0 = math.Exp(-c.NB.Mu)
		}
		ek = c.NB.Mu / (1 - p0)
	}
	times := arrival.Rand(c.Seed, arrival.StreamTimes)
	bursts := arrival.Rand(c.Seed, arrival.StreamBursts)

	var reqs []oracleRequest
	t := 0.0
	for e := 0; ; e++ {
		// Which window is t in? Scan from the start every time.
		wi := -1
		for i, w := range wins {
			if t >= w.aStart && t < w.aEnd {
				wi = i
				break
			}
		}
		if wi < 0 {
			break // beyond what was materialised
		}
		w := wins[wi]
		wall := w.start + (t - w.aStart)
		if wall >= horizon {
			break
		}
		k := 1
		if c.NB != nil {
			for {
				lambda := c.NB.Mu
				if c.NB.Alpha > 0 {
					lambda = distuv.Gamma{Alpha: 1 / c.NB.Alpha, Beta: 1 / (c.NB.Alpha * c.NB.Mu), Src: bursts}.Rand()
				}
				k = int(distuv.Poisson{Lambda: lambda, Src: bursts}.Rand())
				if k > 0 {
					break
				}
			}
		}
		offs := make([]float64, k-1)
		for i := range offs {
			offs[i] = bursts.Float64() * 0.000999
		}
		sort.Float64s(offs)
		reqs = append(reqs, oracleRequest{wall: wall, event: e})
		for i, u := range offs {
			reqs = append(reqs, oracleRequest{wall: wall + u, event: e, j: i + 1})
		}
		gap := distuv.Gamma{Alpha: w.shape, Beta: 1 / (w.scaleMS / 1000 * ek), Src: times}.Rand()
		t += gap
	}
	sort.SliceStable(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.wall != b.wall {
			return a.wall < b.wall
		}
		if a.event != b.event {
			return a.event < b.event
		}
		return a.j < b.j
	})
	sizes := arrival.Rand(c.Seed, arrival.StreamLengths)
	firstOf := map[int]int64{}
	var out []arrival.Arrival
	for _, r := range reqs {
		if r.wall >= horizon {
			break
		}
		at := arrival.Seconds(r.wall / scale)
		if c.Duration > 0 && at >= c.Duration {
			break
		}
		if c.Count > 0 && int64(len(out)) >= c.Count {
			break
		}
		i := int64(len(out))
		if _, ok := firstOf[r.event]; !ok {
			firstOf[r.event] = i
		}
		in, o := c.Lengths.Draw(sizes, i)
		out = append(out, arrival.Arrival{Index: i, At: at, InputTokens: in, OutputTokens: o, Model: c.Model, Burst: firstOf[r.event]})
	}
	return out
}

func TestDifferentialAgainstOracle(t *testing.T) {
	small := &Table{Name: "small", Rows: []Row{
		{Shape: 0.3, ScaleMS: 40}, {Shape: 1.7, ScaleMS: 30}, {Shape: 0.5, ScaleMS: 200}, {Shape: 0.9, ScaleMS: 15},
	}}
	bounded := &Table{Name: "bounded", Bounds: true, Rows: []Row{
		{StartMS: 5000, EndMS: 15000, Shape: 0.4, ScaleMS: 50},
		{StartMS: 15000, EndMS: 20000, Shape: 2, ScaleMS: 10},
		{StartMS: 26000, EndMS: 30000, Shape: 0.25, ScaleMS: 80}, // 6 s of silence before
		{StartMS: 30500, EndMS: 41000, Shape: 0.7, ScaleMS: 300},
	}}
	nb := &NB{Mu: 2.6285496273363496, Alpha: 0.03696279493927793}
	wide := &NB{Mu: 1.5, Alpha: 2}
	poisson := &NB{Mu: 0.8, Alpha: 0}
	lengths := arrival.PairLengths{Pairs: [][2]int{{10, 1}, {200, 30}, {3000, 7}, {55, 55}}}
	cases := []struct {
		name   string
		table  *Table
		window time.Duration
		ext    Extension
		jitter float64
		cfg    Config
		upTo   float64
	}{
		{name: "one pass", table: small, window: 10 * time.Second, cfg: Config{Seed: 1}},
		{name: "one pass nb", table: small, window: 10 * time.Second, cfg: Config{Seed: 2, NB: nb}},
		{name: "repeat_jitter 5 passes", table: small, window: 5 * time.Second, jitter: 0.2,
			cfg: Config{Seed: 3, Duration: 100 * time.Second}},
		{name: "model_sample nb", table: small, window: 5 * time.Second, ext: ModelSample,
			cfg: Config{Seed: 4, Duration: 100 * time.Second, NB: wide}},
		{name: "count only", table: small, window: 5 * time.Second, jitter: 0.05,
			cfg: Config{Seed: 5, Count: 3000, NB: nb}, upTo: 1000},
		{name: "count before duration", table: small, window: 5 * time.Second,
			cfg: Config{Seed: 6, Count: 500, Duration: time.Hour}},
		{name: "duration before count", table: small, window: 5 * time.Second,
			cfg: Config{Seed: 7, Count: 1 << 40, Duration: 7 * time.Second}},
		{name: "time scale", table: small, window: 10 * time.Second,
			cfg: Config{Seed: 8, TimeScale: 24, NB: poisson}},
		{name: "time scale duration", table: small, window: 10 * time.Second, ext: ModelSample,
			cfg: Config{Seed: 9, TimeScale: 3.5, Duration: 30 * time.Second}},
		{name: "bounds with silence", table: bounded, cfg: Config{Seed: 10, NB: nb}},
		{name: "bounds extended", table: bounded, jitter: 0.5,
			cfg: Config{Seed: 11, Duration: 150 * time.Second}},
		{name: "slow time scale", table: bounded, cfg: Config{Seed: 12, TimeScale: 0.25, Count: 700}, upTo: 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := NewPlan(PlanConfig{Table: tc.table, Window: tc.window, Extension: tc.ext, JitterRatio: tc.jitter})
			if err != nil {
				t.Fatal(err)
			}
			c := tc.cfg
			c.Plan, c.Lengths, c.Model = plan, lengths, "m"
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			upTo := tc.upTo
			if upTo == 0 {
				upTo = math.Inf(1)
			}
			want := slowSchedule(c, tc.table, tc.window, tc.ext, tc.jitter, upTo)
			var got []arrival.Arrival
			for a := range Schedule(c) {
				got = append(got, a)
			}
			if len(got) < 100 {
				t.Fatalf("only %d arrivals: the case tests too little", len(got))
			}
			if len(got) != len(want) {
				t.Fatalf("%d arrivals, oracle %d", len(got), len(want))
			}
			bursts := 0
			for i := range got {
				g, w := got[i], want[i]
				if d := g.At - w.At; d < -time.Microsecond || d > time.Microsecond ||
					g.Index != w.Index || g.Burst != w.Burst || g.InputTokens != w.InputTokens ||
					g.OutputTokens != w.OutputTokens || g.Model != w.Model {
					t.Fatalf("arrival %d: got %+v, oracle %+v", i, g, w)
				}
				if i > 0 && g.At < got[i-1].At {
					t.Fatalf("arrival %d at %v before arrival %d at %v", i, g.At, i-1, got[i-1].At)
				}
				if g.Burst != g.Index {
					bursts++
				}
			}
			if c.NB != nil && bursts == 0 {
				t.Fatal("NB case without a single multi-request burst")
			}
			t.Logf("%d arrivals, %d in bursts after their first, last at %v", len(got), bursts, got[len(got)-1].At)
		})
	}
}
