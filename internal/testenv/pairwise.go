package testenv

import "fmt"

// Free marks a dimension of a partial row that has no value yet.
const Free = -1

// Pair is one value of each of two dimensions (DimA < DimB).
type Pair struct {
	DimA, ValA, DimB, ValB int
}

func (p Pair) String() string {
	return fmt.Sprintf("dim %d = %d with dim %d = %d", p.DimA, p.ValA, p.DimB, p.ValB)
}

// Pairwise builds a pairwise covering array: rows (one value index per
// dimension) such that every pair of values of two different dimensions
// that Valid allows appears in at least one row. The greedy algorithm is
// deterministic: the same input gives the same rows.
type Pairwise struct {
	// Sizes is the number of values of each dimension (each ≥ 1).
	Sizes []int
	// Valid reports whether the values a row has so far (Free: not yet
	// chosen) can appear together in a case. It must answer false only
	// for values that conflict, whatever the free dimensions become. Nil
	// allows every combination.
	Valid func(row []int) bool
	// Seeds are partial rows (Free where the generator chooses) that each
	// become one row, completed to cover as many pairs as they can, before
	// any other row is added: a set of combinations that must all appear
	// (e.g. a full product of some dimensions).
	Seeds [][]int
}

// Generate returns the rows, and the allowed pairs that no valid row could
// be completed around (empty when Valid is consistent).
func (p Pairwise) Generate() (rows [][]int, uncoverable []Pair) {
	uncovered := map[Pair]bool{}
	var order []Pair // the uncovered pairs in a fixed order
	for _, pr := range p.allPairs() {
		uncovered[pr] = true
		order = append(order, pr)
	}
	add := func(row []int) {
		rows = append(rows, row)
		for _, pr := range pairsOf(row) {
			delete(uncovered, pr)
		}
	}
	for _, seed := range p.Seeds {
		if len(seed) != len(p.Sizes) {
			panic(fmt.Sprintf("pairwise: seed %v has %d dimensions, want %d", seed, len(seed), len(p.Sizes)))
		}
		row, ok := p.complete(append([]int(nil), seed...), uncovered)
		if !ok {
			panic(fmt.Sprintf("pairwise: seed %v cannot be completed to a valid row", seed))
		}
		add(row)
	}
	for _, pr := range order {
		if !uncovered[pr] {
			continue
		}
		start := p.freeRow()
		start[pr.DimA], start[pr.DimB] = pr.ValA, pr.ValB
		row, ok := p.complete(start, uncovered)
		if !ok {
			delete(uncovered, pr)
			uncoverable = append(uncoverable, pr)
			continue
		}
		add(row)
	}
	return rows, uncoverable
}

// Missing returns the allowed pairs that rows do not cover, in a fixed
// order: what a test asserts is empty.
func (p Pairwise) Missing(rows [][]int) []Pair {
	covered := map[Pair]bool{}
	for _, r := range rows {
		for _, pr := range pairsOf(r) {
			covered[pr] = true
		}
	}
	var out []Pair
	for _, pr := range p.allPairs() {
		if !covered[pr] {
			out = append(out, pr)
		}
	}
	return out
}

// allPairs lists every pair Valid allows, dimension by dimension.
func (p Pairwise) allPairs() []Pair {
	var out []Pair
	for a := range p.Sizes {
		for b := a + 1; b < len(p.Sizes); b++ {
			for va := range p.Sizes[a] {
				for vb := range p.Sizes[b] {
					row := p.freeRow()
					row[a], row[b] = va, vb
					if p.valid(row) {
						out = append(out, Pair{a, va, b, vb})
					}
				}
			}
		}
	}
	return out
}

func (p Pairwise) freeRow() []int {
	row := make([]int, len(p.Sizes))
	for i := range row {
		row[i] = Free
	}
	return row
}

func (p Pairwise) valid(row []int) bool { return p.Valid == nil || p.Valid(row) }

// complete fills the free dimensions of row one at a time, in order, each
// with the value that covers the most uncovered pairs with the values
// already chosen (the lowest value on a tie) among those Valid allows. It
// backtracks when a dimension has no allowed value left.
func (p Pairwise) complete(row []int, uncovered map[Pair]bool) ([]int, bool) {
	if !p.valid(row) {
		return nil, false
	}
	d := -1
	for i, v := range row {
		if v == Free {
			d = i
			break
		}
	}
	if d < 0 {
		return row, true
	}
	type choice struct{ v, gain int }
	var choices []choice
	for v := range p.Sizes[d] {
		row[d] = v
		if !p.valid(row) {
			continue
		}
		gain := 0
		for j, w := range row {
			if j == d || w == Free {
				continue
			}
			pr := Pair{j, w, d, v}
			if d < j {
				pr = Pair{d, v, j, w}
			}
			if uncovered[pr] {
				gain++
			}
		}
		choices = append(choices, choice{v, gain})
	}
	// Best gain first, lowest value on a tie (a stable selection sort:
	// dimensions are small).
	for i := range choices {
		best := i
		for j := i + 1; j < len(choices); j++ {
			if choices[j].gain > choices[best].gain {
				best = j
			}
		}
		c := choices[best]
		copy(choices[i+1:best+1], choices[i:best])
		choices[i] = c
	}
	for _, c := range choices {
		row[d] = c.v
		if out, ok := p.complete(row, uncovered); ok {
			return out, true
		}
	}
	row[d] = Free
	return nil, false
}

// pairsOf lists the pairs a complete row covers.
func pairsOf(row []int) []Pair {
	var out []Pair
	for a := range row {
		for b := a + 1; b < len(row); b++ {
			out = append(out, Pair{a, row[a], b, row[b]})
		}
	}
	return out
}
