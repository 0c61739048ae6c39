// Package replay owns trace files: it reads every supported trace format
// (FineServe, Azure LLM/LMM, Mooncake, BurstGPT, Alibaba GenTD26 and
// text-to-image, schedule CSV, any CSV or JSONL) into a compact, time-sorted
// Trace, and turns a slice of a Trace into a Schedule at a scaled time rate.
package replay

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Format names a trace format (--trace-format).
type Format string

// Trace formats.
const (
	FormatAuto   Format = ""          // detect from the extension and header
	FineServe    Format = "fineserve" // timestamp (µs), input_length, output_length
	AzureLLM     Format = "azure-llm" // TIMESTAMP (datetime), ContextTokens, GeneratedTokens
	AzureLMM     Format = "azure-lmm" // as AzureLLM plus NumImages
	Mooncake     Format = "mooncake"  // JSONL: timestamp (ms), input_length, output_length, hash_ids
	BurstGPT     Format = "burstgpt"  // Timestamp (s), Model, Request tokens, Response tokens, …
	ScheduleCSV  Format = "schedule"  // this tool's --schedule-out
	GenericCSV   Format = "csv"       // any CSV: --timestamp-column and friends
	GenericJSONL Format = "jsonl"     // any JSON Lines file: the same flags
	// Image-generation traces (alibaba.go).
	AlibabaLoRA Format = "alibaba-lora" // GenTD26 lora_request_trace.csv
	AlibabaT2I  Format = "alibaba-t2i"  // text-to-image JSON array: timestamp (s), base_model_id, loras, …
)

// Formats lists every format, in documentation order.
var Formats = []Format{FineServe, AzureLLM, AzureLMM, Mooncake, BurstGPT, AlibabaLoRA, AlibabaT2I, ScheduleCSV, GenericCSV, GenericJSONL}

// ParseFormat parses --trace-format; "" and "auto" detect.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "fineserve":
		return FineServe, nil
	case "azure-llm", "azure", "azure2023", "azure2024", "azure-2023", "azure-2024":
		return AzureLLM, nil
	case "azure-lmm", "azure2025", "azure-2025", "azure-multimodal":
		return AzureLMM, nil
	case "mooncake":
		return Mooncake, nil
	case "burstgpt":
		return BurstGPT, nil
	case "schedule":
		return ScheduleCSV, nil
	case "csv":
		return GenericCSV, nil
	case "jsonl", "ndjson":
		return GenericJSONL, nil
	case "alibaba-lora", "gentd26", "alibaba-gentd26", "lora":
		return AlibabaLoRA, nil
	case "alibaba-t2i", "alibaba-diffusion", "t2i", "diffusion":
		return AlibabaT2I, nil
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("trace format %q: want one of %s (or leave unset to detect it)", s, strings.Join(names, ", "))
}

// Options configures Load. The zero value detects the format and uses its
// own column names and timestamp unit.
type Options struct {
	// Format overrides detection.
	Format Format
	// Column names override the format's (FineServe's --timestamp-column,
	// --input-length-column, --output-length-column; --model-column).
	TimestampColumn, InputColumn, OutputColumn, ModelColumn string
	// Unit overrides the format's timestamp unit.
	Unit Unit
	// Strict makes an unusable row an error (*RowError) instead of a
	// counted skip.
	Strict bool
	// KeepFailed keeps rows the trace marks as failed requests (BurstGPT's
	// zero response tokens); their output length becomes MinOutputLen.
	KeepFailed bool
	// MinOutputLen replaces an output length of 0 (default 1).
	MinOutputLen int
	// Scene keeps only the rows of this scene_id (Alibaba text-to-image
	// trace; "" keeps every row). Rows of other scenes are counted in
	// Skipped.Scene.
	Scene string
	// TokenLimit bounds a row's input plus output tokens (the served
	// model's context, max_model_len); rows above it are left out and
	// counted in Skipped.OverLimit (an error with Strict). 0 is
	// DefaultTokenLimit. TokenLimitFrom says where the limit comes from,
	// for messages ("--max-model-len").
	TokenLimit     int
	TokenLimitFrom string
	// Keep, when set, bounds the rows held to those a replay can use (the
	// rest are read and counted, not held), and lets reading stop early
	// (see Keep).
	Keep Keep
	// MaxRows is the most rows a Trace holds (0: DefaultMaxRows); a trace
	// that needs more is an error (*RowCapError).
	MaxRows int
}

// Keep says which rows a replay can use, so that only those are held: a
// trace of 144 M rows (a 1.6 MB gzip file) replayed for 100 requests holds
// 100 rows, not 4 GB. Every usable row is still read and counted (the
// trace's rows, span and mean rate are the whole file's), except that once
// StopAfter usable rows are read, the rows are in time order so far and
// the rows needed are held, reading stops: a later row could only be later
// still (Trace.Stopped says where reading stopped).
type Keep struct {
	// Count, when > 0, keeps the Count earliest rows (--num-prompts of a
	// replay from the start of the trace).
	Count int
	// Before, when > 0, keeps the rows less than Before after the earliest
	// (--trace-start plus --trace-duration).
	Before time.Duration
	// StopAfter is how many usable rows are read at least before reading
	// may stop (0: DefaultStopAfter; < 0: never).
	StopAfter int
}

// On reports whether k bounds the rows held.
func (k Keep) On() bool { return k.Count > 0 || k.Before > 0 }

// DefaultMaxRows is the most rows a trace holds: 33,554,432 (a trace held
// whole takes 16 bytes a row for its times and lengths, 512 MB at the
// most: past 1/32 of the cap the columns are given room for the cap at
// once, not grown by copies; Azure's 2024 trace has 27 M rows). A replay of part of a larger trace holds only that part
// (Options.Keep).
const DefaultMaxRows = 1 << 25

// DefaultStopAfter is how many usable rows are read at least before a
// replay that holds the rows it needs (Options.Keep) stops reading a trace
// in time order: a trace of up to 1,048,576 rows is always read whole.
const DefaultStopAfter = 1 << 20

// RowCapError is a trace with more rows to hold than Options.MaxRows.
type RowCapError struct {
	Path string
	Line int // the line of the first row over the cap
	Max  int
	// Keep: Options.Keep was on; Unordered: the rows were not in time
	// order.
	Keep, Unordered bool
}

func (e *RowCapError) Error() string {
	how := "replay a part of it (--num-prompts or --trace-duration: only that part is held), or split the file"
	switch {
	case e.Keep && e.Unordered:
		how = "the trace is not in time order, so the rows to replay are known only at its end: sort it by time, or split the file"
	case e.Keep:
		how = "the part to replay has more: replay less of it (--num-prompts, --trace-duration), or split the file"
	}
	return fmt.Sprintf("replay: %s: line %d: more than %d rows to hold, the most a trace may have (its times and lengths take 16 bytes a row: %d MB): %s", e.Path, e.Line, e.Max, e.Max*16>>20, how)
}

// DefaultTokenLimit is the token limit of a row, and of any request, when
// neither --max-model-len nor the server gives one: it keeps a mistyped
// length (2147483647) from building a prompt of gigabytes.
const DefaultTokenLimit = 1 << 20

// Limit returns o's token limit and where it comes from.
func (o *Options) Limit() (int, string) {
	if o.TokenLimit > 0 {
		return o.TokenLimit, cmp.Or(o.TokenLimitFrom, "the token limit")
	}
	return DefaultTokenLimit, "the built-in cap"
}

// RowError is an unusable row: the file, line and field, and why.
type RowError struct {
	Path  string
	Line  int
	Field string
	Err   error
}

func (e *RowError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("replay: %s: line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("replay: %s: line %d: %s: %v", e.Path, e.Line, e.Field, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// MaxSkippedLines is how many line numbers of skipped rows are kept.
const MaxSkippedLines = 10

// Skipped tells what Load left out or changed, so that nothing is lost
// silently.
type Skipped struct {
	// Rows is the number of unusable rows skipped (empty, non-numeric,
	// negative or overflowing fields, malformed lines).
	Rows int `json:"skipped_rows"`
	// Lines are the line numbers of the first MaxSkippedLines of them, and
	// First describes the first ("line 21118: timestamp: empty").
	Lines []int  `json:"skipped_lines,omitempty"`
	First string `json:"first_problem,omitempty"`
	// Failed is the number of rows the trace marks as failed requests,
	// left out (they are kept with Options.KeepFailed); FailedWhy says how
	// the format marks them ("" is BurstGPT's 0 response tokens).
	Failed    int    `json:"failed_rows_skipped,omitempty"`
	FailedWhy string `json:"-"`
	// Scene counts the rows of other scenes left out (Options.Scene).
	Scene int `json:"scene_rows_skipped,omitempty"`
	// ZeroInput and ZeroOutput count lengths of 0 raised to 1 token and to
	// MinOutputLen.
	ZeroInput  int `json:"zero_input_raised,omitempty"`
	ZeroOutput int `json:"zero_output_raised,omitempty"`
	// OutOfOrder counts rows earlier than the row before them; the trace
	// was sorted by time (stably: equal times keep their file order).
	OutOfOrder int `json:"out_of_order_rows,omitempty"`
	// OverLimit counts rows whose input plus output tokens exceed Limit
	// (Options.TokenLimit), left out; OverLimitLines are the first
	// MaxSkippedLines of their line numbers and LimitFrom where the limit
	// comes from.
	OverLimit      int    `json:"over_limit_rows,omitempty"`
	OverLimitLines []int  `json:"over_limit_lines,omitempty"`
	Limit          int    `json:"token_limit,omitempty"`
	LimitFrom      string `json:"token_limit_from,omitempty"`
}

// Warnings describes s as human-readable warnings, one a line.
func (s *Skipped) Warnings() []string {
	var w []string
	if s.Rows > 0 {
		w = append(w, fmt.Sprintf("skipped %d unusable row(s) (lines %s); first: %s; --strict makes this an error",
			s.Rows, joinLines(s.Lines, s.Rows), s.First))
	}
	if s.OverLimit > 0 {
		w = append(w, fmt.Sprintf("left out %d row(s) above the token limit %d (input + output tokens; %s) (lines %s); --max-model-len sets the limit",
			s.OverLimit, s.Limit, s.LimitFrom, joinLines(s.OverLimitLines, s.OverLimit)))
	}
	if s.Failed > 0 {
		why := s.FailedWhy
		if why == "" {
			why = "0 response tokens"
		}
		w = append(w, fmt.Sprintf("left out %d failed request(s) (%s); --keep-failed keeps them", s.Failed, why))
	}
	if s.Scene > 0 {
		w = append(w, fmt.Sprintf("left out %d row(s) of other scenes (--scene)", s.Scene))
	}
	if s.ZeroInput > 0 {
		w = append(w, fmt.Sprintf("%d row(s) with input length 0 sent with 1 token", s.ZeroInput))
	}
	if s.ZeroOutput > 0 {
		w = append(w, fmt.Sprintf("%d row(s) with output length 0 ask for --min-output-len tokens", s.ZeroOutput))
	}
	if s.OutOfOrder > 0 {
		w = append(w, fmt.Sprintf("%d row(s) out of time order: sorted by time (equal times keep file order)", s.OutOfOrder))
	}
	return w
}

// joinLines writes the first line numbers of n, with "…" when some are
// not listed.
func joinLines(lines []int, n int) string {
	parts := make([]string, len(lines), len(lines)+1)
	for i, l := range lines {
		parts[i] = fmt.Sprint(l)
	}
	if n > len(lines) {
		parts = append(parts, "…")
	}
	return strings.Join(parts, ", ")
}

// Trace is a trace's usable rows, sorted by time and stored by column (no
// per-row strings: model names are interned). Row i's time At(i) is its
// offset from the first row (unscaled), so At(0) == 0.
type Trace struct {
	// Path is the file read ("" for a reader without a name).
	Path string
	// Format and Unit are the format and timestamp unit used.
	Format Format
	Unit   Unit
	// Rows is the number of data rows read, used or not.
	Rows int
	// Lead is the first row's timestamp on the trace's own clock (for a
	// datetime trace: since the Unix epoch). Replaying a schedule CSV keeps
	// it, so an exported schedule replays at its own offsets.
	Lead time.Duration
	// HasInput and HasOutput report whether the trace gives the lengths;
	// when not (a generic trace without the column), the lengths are 0 and
	// the caller chooses them.
	HasInput, HasOutput bool
	// Skipped tells what was left out or changed.
	Skipped Skipped
	// Detected says in one line how a generic CSV or JSON Lines trace is
	// read: its time column and unit (and how the unit was inferred) and
	// its length columns ("" for the known formats).
	Detected string

	at        []int64 // ns since the first row
	in, out   []int32
	images    []uint16 // nil: the format has no image count
	model     []uint32 // nil: the format has no model column
	models    []string // interned names; model[i] indexes it
	burst     []int64  // nil: every row is its own event (schedule CSV only)
	blockOff  []int    // nil: no prefix blocks; else len n+1 offsets into blocks
	blocks    []uint64 // Mooncake hash_ids of every row, concatenated
	hasModels bool
	gen       *genColumns // nil: not an image-generation trace (alibaba.go)
	inst      []uint32    // nil: no instance column; else indexes insts
	insts     []string
	// Tasks counts the usable rows by task (GenTD26's predict_type), nil
	// when the format has none.
	Tasks map[string]int
	// Stopped is the line reading stopped at, before the end of the file
	// (0: read whole; see Keep).
	Stopped int

	usable int   // usable rows read (held or not)
	span   int64 // from the earliest usable row to the latest, ns
}

// Len is the number of rows held: the usable rows, or with Options.Keep
// those the replay can use.
func (t *Trace) Len() int { return len(t.at) }

// Usable is the number of usable rows read (held or not).
func (t *Trace) Usable() int { return t.usable }

// At is row i's offset from the first row, on the trace's clock.
func (t *Trace) At(i int) time.Duration { return time.Duration(t.at[i]) }

// Span is the offset of the latest usable row read (held or not) from the
// earliest (0 for an empty trace).
func (t *Trace) Span() time.Duration { return time.Duration(t.span) }

// InputTokens is row i's prompt length (≥ 1 when HasInput).
func (t *Trace) InputTokens(i int) int { return int(t.in[i]) }

// OutputTokens is row i's output length (≥ MinOutputLen when HasOutput).
func (t *Trace) OutputTokens(i int) int { return int(t.out[i]) }

// Model is row i's model name, "" when the format has none.
func (t *Trace) Model(i int) string {
	if t.model == nil {
		return ""
	}
	return t.models[t.model[i]]
}

// Models lists the distinct model names in order of first appearance in
// the file (nil when the format has none).
func (t *Trace) Models() []string { return t.models }

// HasModels reports whether the format names a model per row.
func (t *Trace) HasModels() bool { return t.model != nil }

// Images is row i's number of input images.
func (t *Trace) Images(i int) int {
	if t.images == nil {
		return 0
	}
	return int(t.images[i])
}

// HasImages reports whether the format gives an image count.
func (t *Trace) HasImages() bool { return t.images != nil }

// PrefixBlocks is row i's prefix block ids (Mooncake hash_ids; nil when
// the format has none). The slice aliases the trace: do not modify it.
func (t *Trace) PrefixBlocks(i int) []uint64 {
	if t.blockOff == nil {
		return nil
	}
	return t.blocks[t.blockOff[i]:t.blockOff[i+1]:t.blockOff[i+1]]
}

// Burst is row i's burst id (schedule CSV), or -1 when rows are events of
// their own.
func (t *Trace) Burst(i int) int64 {
	if t.burst == nil {
		return -1
	}
	return t.burst[i]
}

// MeanRate is the trace's mean request rate over its span, in req/s (0
// with fewer than two rows or a zero span).
func (t *Trace) MeanRate() float64 {
	if t.usable < 2 || t.Span() <= 0 {
		return 0
	}
	return float64(t.usable-1) / t.Span().Seconds()
}

// row is one parsed row, before it is stored.
type row struct {
	line    int
	at      int64
	in, out int32
	images  int32
	model   string
	burst   int64
	blocks  []uint64
	// Image-generation traces (alibaba.go): instance (ip, groupId) and
	// what to generate.
	instance string
	gen      genRow
}

// builder accumulates a Trace.
type builder struct {
	t         *Trace
	o         *Options
	minOut    int32
	limit     int64
	limitFrom string
	prev      int64
	modelIdx  map[string]uint32
	instIdx   map[string]uint32
	unordered bool
	// Options.Keep: the earliest and latest usable row, the latest held,
	// and (Keep.Count) the time at or after which no row is needed.
	keep         Keep
	maxRows      int
	minAt, maxAt int64
	maxHeld      int64
	after        int64
	afterSet     bool
}

// errEnough stops reading: the rows needed are held (Options.Keep).
var errEnough = errors.New("enough rows")

func newBuilder(t *Trace, o *Options, c columns) *builder {
	b := &builder{t: t, o: o, minOut: int32(max(o.MinOutputLen, 1)), keep: o.Keep, maxRows: cmp.Or(o.MaxRows, DefaultMaxRows)}
	if b.keep.StopAfter == 0 {
		b.keep.StopAfter = DefaultStopAfter
	}
	limit, from := o.Limit()
	b.limit, b.limitFrom = int64(limit), from
	t.HasInput, t.HasOutput = c.in, c.out
	if c.images {
		t.images = []uint16{}
	}
	if c.model {
		t.model = []uint32{}
		b.modelIdx = map[string]uint32{}
	}
	if c.burst {
		t.burst = []int64{}
	}
	if c.blocks {
		t.blockOff = []int{0}
	}
	if c.gen {
		t.gen = newGenColumns()
	}
	if c.instance {
		t.inst = []uint32{}
		b.instIdx = map[string]uint32{}
	}
	return b
}

// columns says which optional columns a format's rows carry.
type columns struct {
	in, out, images, model, burst, blocks bool
	gen, instance                         bool // alibaba.go
}

// skip records an unusable row, or returns it as the error in strict mode.
func (b *builder) skip(line int, field string, err error) error {
	re := &RowError{Path: b.t.Path, Line: line, Field: field, Err: err}
	if b.o.Strict {
		return re
	}
	s := &b.t.Skipped
	s.Rows++
	if len(s.Lines) < MaxSkippedLines {
		s.Lines = append(s.Lines, line)
	}
	if s.First == "" {
		if field != "" {
			s.First = fmt.Sprintf("line %d: %s: %v", line, field, err)
		} else {
			s.First = fmt.Sprintf("line %d: %v", line, err)
		}
	}
	return nil
}

// overLimit records a row of n tokens, above the limit: left out and
// counted, or the error in strict mode.
func (b *builder) overLimit(r *row, n int64) error {
	s := &b.t.Skipped
	err := fmt.Errorf("%d input + %d output tokens = %d, above the token limit %d (%s)", r.in, r.out, n, b.limit, b.limitFrom)
	if b.o.Strict {
		return &RowError{Path: b.t.Path, Line: r.line, Field: "input length + output length", Err: err}
	}
	s.OverLimit++
	s.Limit, s.LimitFrom = int(b.limit), b.limitFrom
	if len(s.OverLimitLines) < MaxSkippedLines {
		s.OverLimitLines = append(s.OverLimitLines, r.line)
	}
	return nil
}

// maxImages bounds the image count of a request (uint16 storage).
const maxImages = 1<<16 - 1

// add stores a usable row.
func (b *builder) add(r *row) error {
	t := b.t
	if r.images > maxImages {
		return b.skip(r.line, "images", errOverflow)
	}
	if t.HasInput && r.in == 0 {
		r.in = 1
		t.Skipped.ZeroInput++
	}
	if t.HasOutput && r.out == 0 {
		r.out = b.minOut
		t.Skipped.ZeroOutput++
	}
	if n := int64(r.in) + int64(r.out); n > b.limit {
		return b.overLimit(r, n)
	}
	if t.usable > 0 && r.at < b.prev {
		t.Skipped.OutOfOrder++
		b.unordered = true
	}
	b.prev = r.at
	if t.usable == 0 || r.at < b.minAt {
		b.minAt = r.at
	}
	if t.usable == 0 || r.at > b.maxAt {
		b.maxAt = r.at
	}
	t.usable++
	if !b.needed(r.at) {
		// Counted, not held; the trace's names are every usable row's.
		if t.model != nil {
			intern(b.modelIdx, &t.models, r.model)
		}
		if t.inst != nil {
			intern(b.instIdx, &t.insts, r.instance)
		}
		if !b.unordered && b.keep.StopAfter > 0 && t.usable >= b.keep.StopAfter {
			t.Stopped = r.line
			return errEnough
		}
		return nil
	}
	if len(t.at) >= b.maxRows {
		return &RowCapError{Path: t.Path, Line: r.line, Max: b.maxRows, Keep: b.keep.On(), Unordered: b.unordered}
	}
	if n := len(t.at); n == cap(t.at) && n >= b.maxRows/reserveShare {
		b.reserve()
	}
	b.maxHeld = max(b.maxHeld, r.at)
	if k := b.keep.Count; k > 0 && len(t.at)+1 == k {
		b.after, b.afterSet = b.maxHeld, true
	}
	t.at = append(t.at, r.at)
	t.in = append(t.in, r.in)
	t.out = append(t.out, r.out)
	if t.images != nil {
		t.images = append(t.images, uint16(r.images))
	}
	if t.model != nil {
		t.model = append(t.model, intern(b.modelIdx, &t.models, r.model))
	}
	if t.burst != nil {
		t.burst = append(t.burst, r.burst)
	}
	if t.blockOff != nil {
		t.blocks = append(t.blocks, r.blocks...)
		t.blockOff = append(t.blockOff, len(t.blocks))
	}
	if t.gen != nil {
		t.gen.add(&r.gen)
	}
	if t.inst != nil {
		t.inst = append(t.inst, intern(b.instIdx, &t.insts, r.instance))
	}
	return nil
}

// reserveShare: once a trace holds maxRows/reserveShare rows, its columns
// are given room for maxRows at once (builder.reserve).
const reserveShare = 32

// reserve gives the columns held room for maxRows rows, so that they do
// not grow by copies from there: a column that grows by appending is
// copied into one a quarter larger each time, and the copies left behind
// took three times the columns' size (1.57 GB for 33.5 M rows where the
// columns are 512 MB). The room is address space until rows are written
// into it.
func (b *builder) reserve() {
	t, n := b.t, b.maxRows
	t.at = growTo(t.at, n)
	t.in = growTo(t.in, n)
	t.out = growTo(t.out, n)
	if t.images != nil {
		t.images = growTo(t.images, n)
	}
	if t.model != nil {
		t.model = growTo(t.model, n)
	}
	if t.burst != nil {
		t.burst = growTo(t.burst, n)
	}
	if t.inst != nil {
		t.inst = growTo(t.inst, n)
	}
	if t.blockOff != nil {
		t.blockOff = growTo(t.blockOff, n+1)
	}
}

// growTo returns s with room for n elements.
func growTo[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	return append(make([]T, 0, n), s...)
}

// needed reports whether a usable row at time at may be one the replay
// uses (Options.Keep). The rows held are a superset of those needed: the
// earliest row so far only moves earlier, so a row past Keep.Before from
// it stays past; once Keep.Count rows are held, a row at or after the
// latest of them (a tie sorts after them) is never among the Count
// earliest.
func (b *builder) needed(at int64) bool {
	if d := b.keep.Before; d > 0 && at-b.minAt >= int64(d) {
		return false
	}
	return !b.afterSet || at < b.after
}

// end finishes a reader's pass: err is its error, errEnough when it
// stopped early.
func (b *builder) end(err error) error {
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	b.finish()
	return nil
}

// intern returns name's id: its index in *names, where a copy of it (the
// row's text may alias a reused buffer) is appended on first sight.
func intern(idx map[string]uint32, names *[]string, name string) uint32 {
	id, ok := idx[name]
	if !ok {
		id = uint32(len(*names))
		name = strings.Clone(name)
		*names = append(*names, name)
		idx[name] = id
	}
	return id
}

// finish sorts the rows by time if needed and makes times relative to the
// first row.
func (b *builder) finish() {
	t := b.t
	if b.unordered {
		b.sort()
	}
	if len(t.at) > 0 {
		lead := t.at[0] // the earliest usable row is always held
		t.Lead = time.Duration(lead)
		for i := range t.at {
			t.at[i] -= lead
		}
		t.span = b.maxAt - lead
	}
}

// sort orders the rows by time, stably, by sorting an index and applying
// it to every column.
func (b *builder) sort() {
	t := b.t
	idx := make([]int32, len(t.at))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(x, y int32) int { return cmp.Compare(t.at[x], t.at[y]) })
	t.at = permute(t.at, idx)
	t.in = permute(t.in, idx)
	t.out = permute(t.out, idx)
	if t.images != nil {
		t.images = permute(t.images, idx)
	}
	if t.model != nil {
		t.model = permute(t.model, idx)
	}
	if t.burst != nil {
		t.burst = permute(t.burst, idx)
	}
	if t.blockOff != nil {
		t.blockOff, t.blocks = permuteRuns(t.blockOff, t.blocks, idx)
	}
	if t.gen != nil {
		t.gen.permute(idx)
	}
	if t.inst != nil {
		t.inst = permute(t.inst, idx)
	}
}

func permute[T any](s []T, idx []int32) []T {
	out := make([]T, len(s))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}

// permuteRuns is permute for a column of variable-length runs: row i's
// values are vals[off[i]:off[i+1]].
func permuteRuns[T any](off []int, vals []T, idx []int32) ([]int, []T) {
	newOff := make([]int, 1, len(off))
	newVals := make([]T, 0, len(vals))
	for _, i := range idx {
		newVals = append(newVals, vals[off[i]:off[i+1]]...)
		newOff = append(newOff, len(newVals))
	}
	return newOff, newVals
}

// errNoRows is returned when a trace has no usable row.
var errNoRows = errors.New("no usable row")
