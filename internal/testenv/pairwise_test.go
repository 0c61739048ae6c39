package testenv

import (
	"fmt"
	"reflect"
	"testing"
)

// bruteMissing is an independent check of coverage: for every two
// dimensions and every two values Valid allows together, scan the rows.
func bruteMissing(sizes []int, valid func([]int) bool, rows [][]int) int {
	missing := 0
	for a := range sizes {
		for b := a + 1; b < len(sizes); b++ {
			for va := 0; va < sizes[a]; va++ {
				for vb := 0; vb < sizes[b]; vb++ {
					probe := make([]int, len(sizes))
					for i := range probe {
						probe[i] = Free
					}
					probe[a], probe[b] = va, vb
					if valid != nil && !valid(probe) {
						continue
					}
					found := false
					for _, r := range rows {
						if r[a] == va && r[b] == vb {
							found = true
							break
						}
					}
					if !found {
						missing++
					}
				}
			}
		}
	}
	return missing
}

func TestPairwiseCoversEveryPair(t *testing.T) {
	for _, tc := range []struct {
		sizes   []int
		maxRows int // a greedy bound well above the optimum, far below the product
	}{
		{[]int{2, 2, 2}, 6},
		{[]int{3, 3, 3, 3}, 15},                   // optimum 9, product 81
		{[]int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 12}, // optimum 6, product 1024
		{[]int{5, 3, 4, 2, 6, 2, 3}, 45},          // optimum ≥ 30
		{[]int{7}, 7},
		{[]int{4, 1, 3}, 12},
	} {
		t.Run(fmt.Sprint(tc.sizes), func(t *testing.T) {
			p := Pairwise{Sizes: tc.sizes}
			rows, unc := p.Generate()
			if len(unc) != 0 {
				t.Errorf("uncoverable pairs without constraints: %v", unc)
			}
			if n := bruteMissing(tc.sizes, nil, rows); n != 0 {
				t.Errorf("%d pairs not covered by %d rows", n, len(rows))
			}
			if m := p.Missing(rows); len(m) != 0 {
				t.Errorf("Missing reports %v", m)
			}
			if len(rows) > tc.maxRows {
				t.Errorf("%d rows, want at most %d", len(rows), tc.maxRows)
			}
			for _, r := range rows {
				for d, v := range r {
					if v < 0 || v >= tc.sizes[d] {
						t.Fatalf("row %v: dimension %d out of range", r, d)
					}
				}
			}
			again, _ := p.Generate()
			if !reflect.DeepEqual(rows, again) {
				t.Error("two generations differ")
			}
		})
	}
}

// TestPairwiseMissingCanFail: the coverage check reports a pair that a row
// removal uncovered, so a test relying on it can fail.
func TestPairwiseMissingCanFail(t *testing.T) {
	p := Pairwise{Sizes: []int{3, 3, 3}}
	rows, _ := p.Generate()
	if len(p.Missing(rows)) != 0 {
		t.Fatal("full set reported incomplete")
	}
	cut := rows[1:]
	if len(p.Missing(cut)) == 0 || bruteMissing(p.Sizes, nil, cut) != len(p.Missing(cut)) {
		t.Errorf("after dropping row %v: Missing %v, brute force %d", rows[0], p.Missing(cut), bruteMissing(p.Sizes, nil, cut))
	}
}

func TestPairwiseConstraintsAndSeeds(t *testing.T) {
	// Dimension 0 value 2 only goes with dimension 1 value 0; dimension 2
	// value 1 never goes with dimension 3 value 1.
	valid := func(r []int) bool {
		if r[0] == 2 && r[1] != Free && r[1] != 0 {
			return false
		}
		return !(r[2] == 1 && r[3] == 1)
	}
	seeds := [][]int{{0, 1, Free, Free}, {2, 0, Free, Free}, {1, 2, 0, Free}}
	p := Pairwise{Sizes: []int{3, 3, 2, 2}, Valid: valid, Seeds: seeds}
	rows, unc := p.Generate()
	if len(unc) != 0 {
		t.Errorf("uncoverable: %v", unc)
	}
	if n := bruteMissing(p.Sizes, valid, rows); n != 0 {
		t.Errorf("%d allowed pairs not covered", n)
	}
	for i, r := range rows {
		if !valid(r) {
			t.Errorf("row %d %v breaks the constraints", i, r)
		}
	}
	for i, s := range seeds {
		for d, v := range s {
			if v != Free && rows[i][d] != v {
				t.Errorf("row %d %v does not keep seed %v", i, rows[i], s)
			}
		}
	}
}

// TestPairwiseReportsUncoverable: a pair allowed on its own that no
// complete row can hold (a constraint across three dimensions) is
// reported, not silently dropped.
func TestPairwiseReportsUncoverable(t *testing.T) {
	valid := func(r []int) bool {
		// (0=1, 1=1) needs 2=1, and (1=1, 2=1) is forbidden.
		if r[0] == 1 && r[1] == 1 && r[2] == 0 {
			return false
		}
		return !(r[1] == 1 && r[2] == 1)
	}
	p := Pairwise{Sizes: []int{2, 2, 2}, Valid: valid}
	_, unc := p.Generate()
	if want := []Pair{{0, 1, 1, 1}}; !reflect.DeepEqual(unc, want) {
		t.Errorf("uncoverable %v, want %v", unc, want)
	}
}
