package parametric

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// LengthPairs is what ReadLengthPairs found: the usable (input, output)
// pairs, in file order, and the rows it skipped.
type LengthPairs struct {
	Pairs [][2]int
	// Skipped counts rows without two integer lengths ≥ 1; SkippedLines are
	// the first few of their line numbers.
	Skipped      int
	SkippedLines []int
}

// maxLength bounds an accepted token length (as every length flag).
const maxLength = arrival.MaxLength

// ReadLengthPairs reads request sizes from a CSV with a header naming the
// input and output columns (default input_length and output_length). Rows
// whose lengths are empty, not integers (63.0 is accepted) or below 1 are
// skipped and counted; a file with no usable row is an error.
func ReadLengthPairs(r io.Reader, name, inCol, outCol string) (*LengthPairs, error) {
	if inCol == "" {
		inCol = "input_length"
	}
	if outCol == "" {
		outCol = "output_length"
	}
	cr := csv.NewReader(bufio.NewReader(r))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{File: name, Line: 1, Err: fmt.Errorf("empty file: want a header with %s and %s", inCol, outCol)}
	}
	if err != nil {
		return nil, &ParseError{File: name, Line: csvLine(err, 1), Err: csvCause(err)}
	}
	col := headerColumns(head)
	iIn, okIn := col[inCol]
	iOut, okOut := col[outCol]
	if !okIn || !okOut {
		return nil, &ParseError{File: name, Line: 1, Err: fmt.Errorf("header %q lacks %s or %s", strings.Join(head, ","), inCol, outCol)}
	}
	lp := &LengthPairs{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &ParseError{File: name, Line: csvLine(err, 0), Err: csvCause(err)}
		}
		in, ok1 := length(rec, iIn)
		out, ok2 := length(rec, iOut)
		if !ok1 || !ok2 {
			lp.Skipped++
			if len(lp.SkippedLines) < 5 {
				line, _ := cr.FieldPos(0)
				lp.SkippedLines = append(lp.SkippedLines, line)
			}
			continue
		}
		lp.Pairs = append(lp.Pairs, [2]int{in, out})
	}
	if len(lp.Pairs) == 0 {
		return nil, &ParseError{File: name, Err: fmt.Errorf("no row with %s and %s both ≥ 1 (%d rows skipped)", inCol, outCol, lp.Skipped)}
	}
	return lp, nil
}

func length(rec []string, i int) (int, bool) {
	if i >= len(rec) {
		return 0, false
	}
	s := strings.TrimSpace(rec[i])
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 1 && n <= maxLength
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 1 || f > maxLength {
		return 0, false
	}
	return int(f), true
}

// SampleLengthPairs returns at most limit of the n pairs pair(0), …,
// pair(n−1), in their order: all of them when n ≤ limit, else a uniform
// sample without replacement (reservoir sampling from a source seeded with
// seed: the same inputs give the same sample). Memory is O(limit).
func SampleLengthPairs(n, limit int, seed uint64, pair func(i int) [2]int) [][2]int {
	if n <= 0 || limit <= 0 {
		return nil
	}
	idx := make([]int, 0, min(n, limit))
	r := rand.New(rand.NewPCG(seed, 0x6c656e67746873)) // stream "lengths"
	for i := range n {
		if i < limit {
			idx = append(idx, i)
		} else if j := r.IntN(i + 1); j < limit {
			idx[j] = i
		}
	}
	slices.Sort(idx)
	out := make([][2]int, len(idx))
	for k, i := range idx {
		out[k] = pair(i)
	}
	return out
}

// WriteLengthPairs writes pairs as the CSV ReadLengthPairs reads by
// default (and --request-lengths-csv): a header input_length,output_length
// and one row per pair.
func WriteLengthPairs(w io.Writer, pairs [][2]int) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("input_length,output_length\n")
	var b []byte
	for _, p := range pairs {
		b = strconv.AppendInt(b[:0], int64(p[0]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(p[1]), 10)
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}
