package routing

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// traceSchedule yields one arrival per model name, at 1 ms intervals.
func traceSchedule(models ...string) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for i, m := range models {
			if !yield(arrival.Arrival{Index: int64(i), At: time.Duration(i) * time.Millisecond, Model: m, Burst: int64(i)}) {
				return
			}
		}
	}
}

func routed(s arrival.Schedule) []string {
	var out []string
	for a := range s {
		out = append(out, a.Model)
	}
	return out
}

func TestStrategies(t *testing.T) {
	trace := []string{"ChatGPT", "GPT-4", "ChatGPT", "Mixtral", "GPT-4", ""}
	served := []string{"a", "b", "c"}
	cases := []struct {
		name string
		m    *Map
		want []string
	}{
		{"default: every request to --model", &Map{Strategy: Default}, []string{"", "", "", "", "", ""}},
		{"keep", &Map{Strategy: Keep}, trace},
		{"table with *", &Map{Strategy: Table, Table: map[string]string{"ChatGPT": "a", "GPT-4": "b", "*": "c"}}, []string{"a", "b", "a", "c", "b", "c"}},
		{"table without * sends the rest to --model", &Map{Strategy: Table, Table: map[string]string{"ChatGPT": "a"}}, []string{"a", "", "a", "", "", ""}},
		// Round-robin deals the values in order of first appearance:
		// ChatGPT→a, GPT-4→b, Mixtral→c; a request without a value (index 5)
		// takes served[5 % 3] = c.
		{"round-robin", &Map{Strategy: RoundRobin, Served: served}, []string{"a", "b", "a", "c", "b", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.m.Validate(); err != nil {
				t.Fatal(err)
			}
			got := routed(c.m.Apply(traceSchedule(trace...), 1))
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestHashIsStableAndSeedFree(t *testing.T) {
	m := &Map{Strategy: Hash, Served: []string{"a", "b", "c", "d"}}
	trace := []string{"x", "y", "x", "z", "y", "x"}
	one := routed(m.Apply(traceSchedule(trace...), 1))
	two := routed(m.Apply(traceSchedule(trace...), 99))
	if !slices.Equal(one, two) {
		t.Fatalf("hash depends on the seed: %q vs %q", one, two)
	}
	for i := range trace {
		for j := range trace {
			if trace[i] == trace[j] && one[i] != one[j] {
				t.Fatalf("value %q routed to %q and %q", trace[i], one[i], one[j])
			}
		}
	}
	// Many values spread over every served name.
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("model-%d", i))
	}
	count := map[string]int{}
	for _, s := range routed(m.Apply(traceSchedule(many...), 1)) {
		count[s]++
	}
	for _, s := range m.Served {
		if count[s] < 200 || count[s] > 300 {
			t.Errorf("%s got %d of 1000 values", s, count[s])
		}
	}
}

// zipfCounts routes n arrivals without a model through zipf:s over k names
// and counts each name.
func zipfCounts(n, k int, s float64, seed uint64) []int {
	served := make([]string, k)
	rank := map[string]int{}
	for i := range served {
		served[i] = fmt.Sprintf("lora-%02d", i+1)
		rank[served[i]] = i
	}
	m := &Map{Strategy: Zipf, S: s, Served: served}
	sched := func(yield func(arrival.Arrival) bool) {
		for i := range n {
			if !yield(arrival.Arrival{Index: int64(i)}) {
				return
			}
		}
	}
	counts := make([]int, k)
	for a := range m.Apply(sched, seed) {
		counts[rank[a.Model]]++
	}
	return counts
}

// zipfMisfit compares counts with the shares of Zipf(s): the largest
// difference in share points, and Pearson's chi-square statistic.
func zipfMisfit(counts []int, s float64) (maxAbs, chi2 float64) {
	n := 0
	for _, c := range counts {
		n += c
	}
	for i, p := range ZipfShares(len(counts), s) {
		obs := float64(counts[i]) / float64(n)
		maxAbs = max(maxAbs, math.Abs(obs-p))
		e := p * float64(n)
		chi2 += (float64(counts[i]) - e) * (float64(counts[i]) - e) / e
	}
	return maxAbs, chi2
}

// chi2Crit49 is the 0.999 quantile of the chi-square law with 49 degrees
// of freedom (50 names): a correct sampler exceeds it once in 1,000 seeds.
const chi2Crit49 = 85.35

// TestZipfShares: zipf:1.1 over 50 adapters, 100,000 arrivals. "Within
// ±2 %" is read as share points: every adapter's share of requests is
// within 0.02 of its Zipf share (rank 1 holds 26.6 %, rank 50 0.36 %). That
// alone is loose for the small ranks, so the law is also checked whole: the
// chi-square statistic over the 50 counts stays below its 0.999 quantile.
// Both checks fail for a wrong exponent (the negative controls below).
func TestZipfShares(t *testing.T) {
	const n, k, s = 100_000, 50, 1.1
	counts := zipfCounts(n, k, s, 7)
	maxAbs, chi2 := zipfMisfit(counts, s)
	t.Logf("zipf:%g over %d: rank 1 %d, rank 2 %d, rank 50 %d; max |share − Zipf| %.4f; chi² %.1f", s, k, counts[0], counts[1], counts[k-1], maxAbs, chi2)
	if maxAbs > 0.02 {
		t.Errorf("a share is %.4f away from Zipf(%g), want ≤ 0.02", maxAbs, s)
	}
	if chi2 > chi2Crit49 {
		t.Errorf("chi² %.1f > %.2f: the counts do not follow Zipf(%g)", chi2, chi2Crit49, s)
	}
	// Negative controls: the same checks reject neighbouring laws.
	if a, _ := zipfMisfit(counts, 0.8); a <= 0.02 {
		t.Errorf("the share check accepts Zipf(0.8) for zipf:1.1 draws (max diff %.4f)", a)
	}
	for _, other := range []float64{1.0, 1.2} {
		if _, c := zipfMisfit(counts, other); c <= chi2Crit49 {
			t.Errorf("the chi² check accepts Zipf(%g) for zipf:1.1 draws (chi² %.1f)", other, c)
		}
	}
	if _, c := zipfMisfit(zipfCounts(n, k, 1.0, 7), s); c <= chi2Crit49 {
		t.Errorf("zipf:1.0 draws pass as Zipf(1.1) (chi² %.1f)", c)
	}
}

// TestZipfIsPerIndex: a request's name depends on the seed and its index
// only, so shards (every I-th arrival) draw what the whole schedule draws.
func TestZipfIsPerIndex(t *testing.T) {
	m := &Map{Strategy: Zipf, S: 1.1, Served: []string{"a", "b", "c", "d", "e"}}
	all := func(yield func(arrival.Arrival) bool) {
		for i := range 1000 {
			if !yield(arrival.Arrival{Index: int64(i)}) {
				return
			}
		}
	}
	whole := routed(m.Apply(all, 3))
	for shard := range int64(3) {
		for a := range arrival.Shard(m.Apply(all, 3), shard, 3) {
			if whole[a.Index] != a.Model {
				t.Fatalf("shard %d: arrival %d routed to %s, the whole schedule says %s", shard, a.Index, a.Model, whole[a.Index])
			}
		}
	}
	if slices.Equal(whole, routed(m.Apply(all, 4))) {
		t.Fatal("a different seed gives the same names")
	}
	if !slices.Equal(whole, routed(m.Apply(all, 3))) {
		t.Fatal("the same seed gives different names")
	}
}

func TestParseStrategyAndInline(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Map
		err  string
	}{
		{in: "hash", want: Map{Strategy: Hash}},
		{in: " Round-Robin ", want: Map{Strategy: RoundRobin}},
		{in: "zipf", want: Map{Strategy: Zipf, S: 1}},
		{in: "zipf:1.1", want: Map{Strategy: Zipf, S: 1.1}},
		{in: "keep", want: Map{Strategy: Keep}},
		{in: "zipf:0", err: "exponent"},
		{in: "zipf:abc", err: "exponent"},
		{in: "hash:3", err: "takes no argument"},
	} {
		m, ok, err := ParseStrategy(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !ok || m.Strategy != c.want.Strategy || m.S != c.want.S {
			t.Errorf("%q: %+v %v %v, want %+v", c.in, m, ok, err, c.want)
		}
	}
	if _, ok, _ := ParseStrategy("maps/burstgpt.yaml"); ok {
		t.Error("a file name parsed as a strategy")
	}
	m, err := ParseInline("ChatGPT=llama-8b, GPT-4 = llama-70b,*=")
	if err != nil || m.Table["ChatGPT"] != "llama-8b" || m.Table["GPT-4"] != "llama-70b" || m.Table["*"] != "" || len(m.Table) != 3 {
		t.Fatalf("inline: %+v %v", m, err)
	}
	if _, err := ParseInline("a=b,=c"); err == nil {
		t.Error("an empty FROM accepted")
	}
	if _, err := ParseInline("a=b,a=c"); err == nil {
		t.Error("a value mapped twice accepted")
	}
	if err := (&Map{Strategy: Hash}).Validate(); err == nil || !strings.Contains(err.Error(), "--served-models") {
		t.Errorf("hash without served names: %v", err)
	}
	if err := (&Map{Strategy: RoundRobin, Served: []string{"a", "a"}}).Validate(); err == nil {
		t.Error("a served name listed twice accepted")
	}
}

func TestParseFile(t *testing.T) {
	for _, c := range []struct {
		name, data string
		check      func(m *Map) bool
		err        string
	}{
		{"yaml table", "ChatGPT: llama-8b\nGPT-4: llama-70b\n\"*\": ~\n", func(m *Map) bool {
			return m.Strategy == Table && m.Table["ChatGPT"] == "llama-8b" && m.Table["GPT-4"] == "llama-70b" && m.Table["*"] == ""
		}, ""},
		{"json table", `{"ChatGPT": "a", "GPT-4": "b", "*": ""}`, func(m *Map) bool {
			return m.Strategy == Table && m.Table["GPT-4"] == "b" && len(m.Table) == 3
		}, ""},
		{"numeric keys", "123: sd15\n4.5: sdxl\n", func(m *Map) bool { return m.Table["123"] == "sd15" && m.Table["4.5"] == "sdxl" }, ""},
		{"zipf strategy", "strategy: zipf:1.1\nserved_models: [a, b, c]\n", func(m *Map) bool {
			return m.Strategy == Zipf && m.S == 1.1 && slices.Equal(m.Served, []string{"a", "b", "c"})
		}, ""},
		{"zipf with s", "strategy: zipf\ns: 0.9\nserved_models:\n  - a\n  - b\n", func(m *Map) bool { return m.S == 0.9 }, ""},
		{"json strategy", `{"strategy": "hash", "served_models": ["x", "y"]}`, func(m *Map) bool { return m.Strategy == Hash && len(m.Served) == 2 }, ""},
		{"table strategy", "strategy: table\nmap:\n  strategy: s1\n  '*': s2\n", func(m *Map) bool { return m.Table["strategy"] == "s1" }, ""},
		{"duplicate key", "a: x\nb: y\na: z\n", nil, "line 3: \"a\" is listed twice (first on line 1)"},
		{"list value", "a: [x, y]\n", nil, "line 1: \"a\": want a served name"},
		{"not a mapping", "- a\n- b\n", nil, "line 1: want a mapping"},
		{"bad strategy", "strategy: random\n", nil, "line 1: strategy \"random\""},
		{"unknown key", "strategy: hash\nserved: [a]\nweights: [1]\n", nil, "line 3: unknown key \"weights\""},
		{"map with hash", "strategy: hash\nmap: {a: b}\n", nil, "only used by strategy table"},
		{"empty", "", nil, "empty"},
		{"syntax", "a: [b\n", nil, "model map m.yaml: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseFile("m.yaml", []byte(c.data))
			if testenv.WantErr(t, err, c.err) {
				return
			}
			if !c.check(m) {
				t.Fatalf("map %+v", m)
			}
		})
	}
}

// FuzzParseFile: any input parses or fails with the file's name, never
// panics; a parsed table written back as JSON parses to the same table.
func FuzzParseFile(f *testing.F) {
	for _, s := range []string{
		"ChatGPT: llama-8b\nGPT-4: llama-70b\n\"*\": llama-8b\n",
		`{"ChatGPT": "a", "GPT-4": "b", "*": null}`,
		"strategy: zipf:1.1\nserved_models: [lora-a, lora-b, lora-c]\n",
		"strategy: table\nmap:\n  x: &a y\n  z: *a\n",
		"a: b\na: c\n",
		"[1, 2]",
		"a: &k " + strings.Repeat(".", 1100) + "\n*k : b\n", // a key too long to write back, through an alias
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return // larger maps add no structure; they only slow minimization
		}
		m, err := ParseFile("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "model map f.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if m.Strategy == Table {
			b, err := json.Marshal(m.Table)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseFile("f.yaml", b)
			if err != nil {
				t.Fatalf("round trip %s: %v", b, err)
			}
			if len(back.Table) != len(m.Table) {
				t.Fatalf("round trip: %d entries, want %d", len(back.Table), len(m.Table))
			}
			for k, v := range m.Table {
				if back.Table[k] != v {
					t.Fatalf("round trip: %q → %q, want %q", k, back.Table[k], v)
				}
			}
		}
		// Applying a parsed map never panics.
		if m.Validate() == nil {
			for range m.Apply(traceSchedule("a", "b", ""), 1) {
			}
		}
	})
}

// FuzzParseSpec: the inline forms of --model-map (a strategy or FROM=TO,…)
// never panic; a parsed table has no empty key.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"zipf:1.1", "hash", "round-robin", "keep", "ChatGPT=llama-8b,GPT-4=llama-70b,*=", "a=b,a=c", "zipf:1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, ok, err := ParseStrategy(s); ok && err == nil {
			if m.Strategy == Zipf && !(m.S > 0 && m.S <= maxZipfS) {
				t.Fatalf("%q: exponent %g", s, m.S)
			}
		}
		if m, err := ParseInline(s); err == nil {
			for k := range m.Table {
				if k == "" {
					t.Fatalf("%q: an empty key", s)
				}
			}
		}
	})
}
