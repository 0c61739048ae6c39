package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"
)

// Column names a generic CSV or JSON Lines trace is read by, matched
// ignoring case, the first present winning. --timestamp-column,
// --input-length-column and --output-length-column override them.
var (
	timeAliases   = []string{"timestamp", "arrival_time", "time", "ts", "created_at"}
	inputAliases  = []string{"input_length", "input_tokens", "prompt_tokens", "context_tokens", "num_prompt_tokens"}
	outputAliases = []string{"output_length", "output_tokens", "completion_tokens", "generated_tokens"}
)

// unitSampleRows is how many leading rows the timestamp unit of a generic
// trace is inferred from (at most the first MiB of the file).
const unitSampleRows = 1000

// findAlias returns the name in names (a header, or an object's keys)
// that matches the first alias, ignoring case, or "".
func findAlias(names, aliases []string) string {
	for _, a := range aliases {
		if i := colIndex(names, a); i >= 0 {
			return names[i]
		}
	}
	return ""
}

// noTimeColumn is the error for a trace with no column to take the time
// from: it says what was looked for and lists the columns there are.
func noTimeColumn(names []string) error {
	return fmt.Errorf("no time column: none of %s (any case) among its columns %q; give --timestamp-column NAME (or --trace-format for a known format)",
		strings.Join(timeAliases, ", "), clipHeader(names))
}

// resolveGeneric names a generic trace's columns from names (the header,
// or the first object's keys): the flags' names, else the usual ones.
func (sp *spec) resolveGeneric(names []string, o *Options) error {
	if sp.name[fTS] == "" {
		if sp.name[fTS] = findAlias(names, timeAliases); sp.name[fTS] == "" {
			return noTimeColumn(names)
		}
	}
	if o.InputColumn == "" {
		sp.name[fIn] = findAlias(names, inputAliases)
	}
	if o.OutputColumn == "" {
		sp.name[fOut] = findAlias(names, outputAliases)
	}
	return nil
}

// describe says in one line what a generic trace is read by.
func (sp *spec) describe(hasIn, hasOut bool) string {
	rule := sp.unitRule
	if rule == "" {
		rule = "--timestamp-unit"
	}
	col := func(k int, ok bool) string {
		if !ok {
			return "none (lengths drawn from --random-input-len/--random-output-len)"
		}
		return sp.name[k]
	}
	return fmt.Sprintf("time column %s: unit %s (%s); input column %s; output column %s",
		sp.name[fTS], sp.unit, rule, col(fIn, hasIn), col(fOut, hasOut))
}

// Median gaps below these (in the file's own numbers) are read as seconds,
// milliseconds and microseconds; larger ones as nanoseconds. Each unit
// then sees median gaps between 30 ms and 30 s, the span of real traces.
const (
	gapSeconds = 30
	gapMillis  = 30e3
	gapMicros  = 30e6
)

// inferUnit sets the unit of a generic trace's timestamps from the first
// rows' values: a date and time is DateTime; numbers go by their median
// gap (gapSeconds and the next). The rule applied is kept in unitRule.
func (sp *spec) inferUnit(vals []string) error {
	var nums []float64
	for _, v := range vals {
		v = trimSpace(v)
		if v == "" {
			continue
		}
		if len(nums) == 0 {
			if _, err := parseDateTime(v); err == nil {
				sp.unit, sp.unitRule = DateTime, fmt.Sprintf("inferred: %q is a date and time; --timestamp-unit overrides", clip(v))
				return nil
			}
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			continue
		}
		nums = append(nums, f)
	}
	if len(nums) == 0 {
		return fmt.Errorf("time column %q: no number or date and time in the first %d rows to infer its unit from: give --timestamp-unit s, ms, us, ns or datetime",
			sp.name[fTS], len(vals))
	}
	var gaps []float64
	for i := 1; i < len(nums); i++ {
		if g := math.Abs(nums[i] - nums[i-1]); g > 0 {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		sp.unit, sp.unitRule = Seconds, "inferred: no gap between the first rows → seconds; --timestamp-unit overrides"
		return nil
	}
	slices.Sort(gaps)
	g := gaps[len(gaps)/2]
	var name string
	switch {
	case g < gapSeconds:
		sp.unit, name = Seconds, "seconds"
	case g < gapMillis:
		sp.unit, name = Millis, "milliseconds"
	case g < gapMicros:
		sp.unit, name = Micros, "microseconds"
	default:
		sp.unit, name = Nanos, "nanoseconds"
	}
	sp.unitRule = fmt.Sprintf("inferred: median gap %s → %s; --timestamp-unit overrides", strconv.FormatFloat(g, 'g', 4, 64), name)
	return nil
}

// sample returns the complete lines in the first MiB ahead in br, at most
// unitSampleRows of them, without consuming them.
func sample(br *bufio.Reader) [][]byte {
	b, err := br.Peek(br.Size())
	if err == nil { // the buffer is full: its last line may be cut
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i]
		}
	}
	var lines [][]byte
	for len(b) > 0 && len(lines) < unitSampleRows {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		if line = bytes.TrimRight(line, "\r"); len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}

// sampleCSV returns column col of the CSV rows ahead in br (sample).
func sampleCSV(br *bufio.Reader, col int) []string {
	var cl csvLines
	var vals []string
	for _, line := range sample(br) {
		rec, err := cl.split(string(line))
		if err == nil && col >= 0 && col < len(rec) {
			vals = append(vals, rec[col])
		}
	}
	return vals
}

// sampleJSONL returns key's values in the JSON Lines rows ahead in br
// (sample): strings as they are, numbers as written.
func sampleJSONL(br *bufio.Reader, key string) []string {
	var p fastjson.Parser
	var vals []string
	for _, line := range sample(br) {
		v, err := p.ParseBytes(line)
		if err != nil {
			continue
		}
		x := v.Get(key)
		switch {
		case x == nil:
		case x.Type() == fastjson.TypeString:
			vals = append(vals, string(x.GetStringBytes()))
		case x.Type() == fastjson.TypeNumber:
			vals = append(vals, string(x.MarshalTo(nil)))
		}
	}
	return vals
}
