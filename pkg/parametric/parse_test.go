package parametric

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/datasets"
)

func TestReadGammaCSV(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		cols   Columns
		rows   int
		bounds bool
		errs   []string // substrings every one of which the error must hold
	}{
		{name: "two columns", in: "gamma_shape,gamma_scale\n0.3,53.7\n0.29,54.2\n", rows: 2},
		{name: "four columns any order", in: "window_end_ms,gamma_scale,window_start_ms,gamma_shape\n300000,50,0,0.3\n600000,60,300000,0.4\n", rows: 2, bounds: true},
		{name: "extra columns, BOM, CRLF, spaces", in: "\ufeffid,gamma_shape,gamma_scale\r\n1, 0.3 ,53.7\r\n", rows: 1},
		{name: "renamed columns", in: "k,theta,a,b\n0.3,50,0,1000\n", cols: Columns{Shape: "k", Scale: "theta", WindowStart: "a", WindowEnd: "b"}, rows: 1, bounds: true},
		{name: "gap between windows", in: "window_start_ms,window_end_ms,gamma_shape,gamma_scale\n0,1000,1,10\n5000,6000,1,10\n", rows: 2, bounds: true},
		{name: "empty", in: "", errs: []string{"f.csv: line 1", "empty file"}},
		{name: "header only", in: "gamma_shape,gamma_scale\n", errs: []string{"f.csv", "no window rows"}},
		{name: "missing column", in: "gamma_shape,scale\n1,2\n", errs: []string{"line 1", "lacks column gamma_scale"}},
		{name: "one bound column", in: "gamma_shape,gamma_scale,window_start_ms\n1,2,0\n", errs: []string{"line 1", "only one of window_start_ms and window_end_ms"}},
		{name: "not a number", in: "gamma_shape,gamma_scale\n0.3,53\n0.3,abc\n", errs: []string{"f.csv: line 3: gamma_scale", `"abc"`}},
		{name: "NaN and Inf", in: "gamma_shape,gamma_scale\nNaN,1\n1,Inf\n", errs: []string{"line 2: gamma_shape", "line 3: gamma_scale", "finite"}},
		{name: "non-positive", in: "gamma_shape,gamma_scale\n0,10\n1,-3\n", errs: []string{"line 2: gamma_shape", "line 3: gamma_scale", "out of range"}},
		{name: "rate too high", in: "gamma_shape,gamma_scale\n0.001,0.0001\n", errs: []string{"line 2: gamma_scale", "below 0.001 ms"}},
		{name: "field count", in: "gamma_shape,gamma_scale\n1,2,3\n1,2\n", errs: []string{"line 2", "wrong number of fields"}},
		{name: "bad quote", in: "gamma_shape,gamma_scale\n\"1,2\n", errs: []string{"f.csv: line", "quote"}},
		{name: "overlap", in: "window_start_ms,window_end_ms,gamma_shape,gamma_scale\n0,1000,1,10\n900,2000,1,10\n", errs: []string{"line 3: window_start_ms", "overlap"}},
		{name: "end before start", in: "window_start_ms,window_end_ms,gamma_shape,gamma_scale\n1000,1000,1,10\n", errs: []string{"line 2: window_end_ms", "after its start"}},
		{name: "many errors capped", in: "gamma_shape,gamma_scale\n" + strings.Repeat("x,1\n", 50), errs: []string{"line 2", "line 11"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := ReadGammaCSV(strings.NewReader(tc.in), "f.csv", tc.cols)
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("no error, %d rows", len(tb.Rows))
				}
				for _, s := range tc.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.File != "f.csv" {
					t.Errorf("error %v is not a *ParseError for f.csv", err)
				}
				if strings.Count(err.Error(), "\n") >= maxErrors {
					t.Errorf("more than %d problems reported", maxErrors)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tb.Rows) != tc.rows || tb.Bounds != tc.bounds {
				t.Fatalf("%d rows, bounds %v; want %d, %v", len(tb.Rows), tb.Bounds, tc.rows, tc.bounds)
			}
		})
	}
}

func TestBundledFiles(t *testing.T) {
	wantRate := map[string]float64{"Dense_lt10B": 56.8, "Dense_10to30B": 17.7, "Dense_30to100B": 0.69, "MoE_gt100B": 2.87}
	for _, class := range datasets.Classes {
		tb := bundledTable(t, class)
		if len(tb.Rows) != bundledRows || tb.Bounds {
			t.Fatalf("%s: %d rows, bounds %v", class, len(tb.Rows), tb.Bounds)
		}
		var rate float64
		for _, r := range tb.Rows {
			rate += 1e3 / r.MeanGapMS() / float64(len(tb.Rows))
		}
		if math.Abs(rate/wantRate[class]-1) > 0.01 {
			t.Errorf("%s: mean rate %.3f req/s, want ≈ %g", class, rate, wantRate[class])
		}
		_, _, hasNB := datasets.NB(class)
		_, _, hasLengths := datasets.Lengths(class)
		if hasNB != (class == "Dense_lt10B") || hasLengths != (class == "Dense_30to100B") {
			t.Errorf("%s: NB %v, lengths %v", class, hasNB, hasLengths)
		}
	}
	nb := bundledNB(t)
	if nb.Mu != 2.6285496273363496 || nb.Alpha != 0.03696279493927793 {
		t.Errorf("bundled NB %+v", nb)
	}
	data, name, _ := datasets.Lengths("Dense_30to100B")
	lp, err := ReadLengthPairs(bytes.NewReader(data), name, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// 27,466 rows in FineServe's file, 117 of them with output_length 0.
	if len(lp.Pairs) != 27466-117 || lp.Skipped != 0 {
		t.Errorf("bundled lengths: %d pairs, %d skipped", len(lp.Pairs), lp.Skipped)
	}
	if err := datasets.CheckClass("Dense_7B"); err == nil {
		t.Error("unknown class accepted")
	}
}

func TestReadNBJSON(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want NB
		errs []string
	}{
		{name: "fineserve", in: `{"num_samples": 5, "nb_mu": 2.5, "nb_alpha": 0.04, "ks_pvalue": 0.0}`, want: NB{2.5, 0.04}},
		{name: "poisson", in: `{"nb_mu": 1, "nb_alpha": 0}`, want: NB{1, 0}},
		{name: "empty", in: ``, errs: []string{"n.json", "empty file"}},
		{name: "syntax", in: "{\n \"nb_mu\": 1,\n \"nb_alpha\": ,\n}", errs: []string{"n.json: line 3", "invalid character"}},
		{name: "not an object", in: "[1, 2]", errs: []string{"n.json: line 1", "JSON object"}},
		{name: "missing", in: `{"nb_mu": 1}`, errs: []string{"n.json: nb_alpha: missing"}},
		{name: "string value", in: "{\"nb_mu\": 1,\n\"nb_alpha\": \"x\"}", errs: []string{"n.json: line 2: nb_alpha", "not a number"}},
		{name: "mu zero", in: `{"nb_mu": 0, "nb_alpha": 1}`, errs: []string{"nb_mu 0 out of range"}},
		{name: "alpha negative", in: `{"nb_mu": 1, "nb_alpha": -1}`, errs: []string{"nb_alpha -1 out of range"}},
		{name: "almost always zero", in: `{"nb_mu": 0.0001, "nb_alpha": 0}`, errs: []string{"P(K ≥ 1)"}},
		{name: "trailing", in: `{"nb_mu": 1, "nb_alpha": 0} {}`, errs: []string{"after the JSON object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nb, err := ReadNBJSON(strings.NewReader(tc.in), "n.json")
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("no error: %+v", nb)
				}
				for _, s := range tc.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil || nb != tc.want {
				t.Fatalf("%+v, %v; want %+v", nb, err, tc.want)
			}
		})
	}
}

func TestReadLengthPairs(t *testing.T) {
	in := "timestamp,input_length,output_length\n1,10,20\n2,,5\n3,63.0,7\n4,5,0\n5,-1,3\n6,2.5,1\n7,8,9\n"
	lp, err := ReadLengthPairs(strings.NewReader(in), "l.csv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{10, 20}, {63, 7}, {8, 9}}; !reflect.DeepEqual(lp.Pairs, want) {
		t.Errorf("pairs %v, want %v", lp.Pairs, want)
	}
	if lp.Skipped != 4 || !reflect.DeepEqual(lp.SkippedLines, []int{3, 5, 6, 7}) {
		t.Errorf("skipped %d at %v", lp.Skipped, lp.SkippedLines)
	}
	if _, err := ReadLengthPairs(strings.NewReader("a,b\n1,2\n"), "l.csv", "in", "out"); err == nil || !strings.Contains(err.Error(), "lacks in or out") {
		t.Errorf("missing columns: %v", err)
	}
	if _, err := ReadLengthPairs(strings.NewReader("input_length,output_length\n0,0\n"), "l.csv", "", ""); err == nil || !strings.Contains(err.Error(), "no row") {
		t.Errorf("no usable row: %v", err)
	}
}

// FuzzReadGammaCSV: any input gives a table or an error naming the file,
// never a panic; a table read back from what WriteGammaCSV writes is the
// same table.
func FuzzReadGammaCSV(f *testing.F) {
	f.Add([]byte("gamma_shape,gamma_scale\n0.3,53.7\n0.29,54.2\n"))
	f.Add([]byte("window_start_ms,window_end_ms,gamma_shape,gamma_scale\n0,300000,0.3,50\n300000,600000,1e3,1e-2\n"))
	f.Add([]byte("gamma_scale,x,gamma_shape\n\"1\",,2\n"))
	f.Add([]byte("gamma_shape,gamma_scale\n1,2,3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := ReadGammaCSV(bytes.NewReader(data), "fuzz.csv", Columns{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(tb.Rows) == 0 {
			t.Fatal("no rows and no error")
		}
		var buf bytes.Buffer
		if err := WriteGammaCSV(&buf, tb); err != nil {
			t.Fatal(err)
		}
		back, err := ReadGammaCSV(&buf, "fuzz.csv", Columns{})
		if err != nil {
			t.Fatalf("written table does not read back: %v\n%s", err, buf.String())
		}
		if len(back.Rows) != len(tb.Rows) || back.Bounds != tb.Bounds {
			t.Fatalf("round trip: %d rows (bounds %v), want %d (%v)", len(back.Rows), back.Bounds, len(tb.Rows), tb.Bounds)
		}
		for i := range tb.Rows {
			a, b := tb.Rows[i], back.Rows[i]
			a.Line, b.Line = 0, 0
			if a != b {
				t.Fatalf("row %d: %+v read back as %+v", i, a, b)
			}
		}
		if _, err := NewPlan(PlanConfig{Table: tb, Window: windowLength}); err != nil {
			t.Fatalf("valid table, invalid plan: %v", err)
		}
	})
}

// FuzzReadNBJSON: any input gives a valid model or an error naming the
// file; a model written back reads back the same.
func FuzzReadNBJSON(f *testing.F) {
	f.Add([]byte(`{"num_samples": 4905409, "mean": 2.63, "nb_mu": 2.6285496273363496, "nb_alpha": 0.03696279493927793}`))
	f.Add([]byte("{\n\"nb_mu\": 1e-3,\n\"nb_alpha\": 100\n}"))
	f.Add([]byte(`{"nb_mu": "2", "nb_alpha": null}`))
	f.Add([]byte(`[{"nb_mu": 1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb, err := ReadNBJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := nb.Validate(); err != nil {
			t.Fatalf("accepted an invalid model %+v: %v", nb, err)
		}
		if m := nb.Mean(); !(m >= 1) || math.IsInf(m, 0) {
			t.Fatalf("model %+v: E[K] = %g", nb, m)
		}
		var buf bytes.Buffer
		if err := WriteNBJSON(&buf, NBFile{NBMu: nb.Mu, NBAlpha: nb.Alpha}); err != nil {
			t.Fatal(err)
		}
		back, err := ReadNBJSON(&buf, "fuzz.json")
		if err != nil || back != nb {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, nb)
		}
	})
}
