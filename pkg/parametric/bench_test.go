package parametric

import (
	"bytes"
	"io"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/datasets"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// bundledTable reads the bundled Gamma file of class.
func bundledTable(tb testing.TB, class string) *Table {
	tb.Helper()
	data, name, err := datasets.Gamma(class)
	if err != nil {
		tb.Fatal(err)
	}
	t, err := ReadGammaCSV(bytes.NewReader(data), name, Columns{})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func bundledNB(tb testing.TB) *NB {
	tb.Helper()
	data, name, ok := datasets.NB("Dense_lt10B")
	if !ok {
		tb.Fatal("no bundled NB")
	}
	nb, err := ReadNBJSON(bytes.NewReader(data), name)
	if err != nil {
		tb.Fatal(err)
	}
	return &nb
}

func benchConfig(b testing.TB, class string, nb bool) Config {
	plan, err := NewPlan(PlanConfig{Table: bundledTable(b, class), Window: 300e9})
	if err != nil {
		b.Fatal(err)
	}
	c := Config{Plan: plan, Count: 1_000_000, Seed: 1, Lengths: arrival.UniformLengths{Input: 1024, Output: 128}}
	if nb {
		c.NB = bundledNB(b)
	}
	return c
}

// BenchmarkSchedule1M generates one million arrivals per iteration.
func BenchmarkSchedule1M(b *testing.B) {
	for _, bc := range []struct {
		name  string
		class string
		nb    bool
	}{
		{"Dense_lt10B", "Dense_lt10B", false},
		{"Dense_lt10B+NB", "Dense_lt10B", true},
		{"MoE_gt100B", "MoE_gt100B", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := benchConfig(b, bc.class, bc.nb)
			for b.Loop() {
				n := 0
				for range Schedule(c) {
					n++
				}
				if n != 1_000_000 {
					b.Fatalf("%d arrivals", n)
				}
			}
		})
	}
}

// BenchmarkScheduleCSV1M generates one million arrivals and writes them as
// a schedule CSV (--schedule-out) to nowhere.
func BenchmarkScheduleCSV1M(b *testing.B) {
	c := benchConfig(b, "Dense_lt10B", true)
	for b.Loop() {
		if n, err := arrival.WriteCSV(io.Discard, Schedule(c)); err != nil || n != 1_000_000 {
			b.Fatal(n, err)
		}
	}
}
