package report

import (
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// FlushInterval is how long a finished record may wait in memory: the
// record writer writes every record to its file at most FlushInterval
// after Add took it (plus the time of the write itself), so a killed run
// loses at most the records of its last interval — more only when the
// disk is slower than the run, and then the backlog is reported (see
// RecordWriter).
const FlushInterval = 100 * time.Millisecond

// recordChunk is how many bytes of records the writer writes at once
// without waiting for FlushInterval.
const recordChunk = 64 << 10

// RecordWriter streams one JSON object per finished request (JSON Lines)
// without ever making its caller wait for the disk. Add encodes the record
// into memory; a goroutine of the writer's own writes what is encoded, in
// order, as soon as it makes a chunk of 64 KiB or its oldest record has
// waited FlushInterval. That goroutine's timer is the one flush mechanism:
// the caller calls nothing for records to reach the file. The guarantees:
//   - every record is written within FlushInterval of its Add (plus the
//     write itself) while the disk keeps up;
//   - Add never waits for the disk: it holds the writer's lock only to
//     append to memory, never during a write;
//   - no record is dropped: a disk slower than the run makes the records
//     waiting in memory grow;
//   - and that is reported: when a record is still unwritten
//     2×FlushInterval after its Add, the disk is behind, and the most
//     records (and bytes) waiting at such a time is kept (MaxBacklog).
//
// Add, Sync and Close are called from one goroutine.
type RecordWriter struct {
	w     io.Writer
	enc   func([]byte, *metrics.Sample) []byte // AppendRecord, or AppendRecordCSV
	path  string                               // the file's name, for errors ("": none)
	close func() error                         // syncs and closes the file (nil: nothing to close)
	now   func() time.Time

	n         int64 // records added (the caller's)
	closed    bool
	wake      chan struct{} // tells the writer's goroutine to look again (buffered)
	writeDone chan struct{}

	mu   sync.Mutex
	cond *sync.Cond // signals Sync that a write ended
	// cur are the records encoded and not yet taken by the writer, the
	// oldest added at curAt.
	cur   []byte
	curN  int64
	curAt time.Time
	// busy are the records being written (n == 0: none); spare is the
	// storage of the last batch written, for reuse.
	busy  batch
	spare []byte
	// urgent asks the writer to take cur at once (Sync); quit to take what
	// is left and stop (Close).
	urgent, quit bool
	max          Backlog
	err          error
}

// batch is records taken by the writer.
type batch struct {
	n, bytes int64
	at       time.Time // when the oldest was added
}

// Backlog is an amount of records waiting for the writer.
type Backlog struct {
	Records, Bytes int64
}

// CreateRecords creates (truncates) path for per-request records; now is
// the writer's clock (nil: time.Now, see NewRecordWriter).
func CreateRecords(path string, now func() time.Time) (*RecordWriter, error) {
	return createRecords(path, now, NewRecordWriter)
}

// createRecords creates path and a writer of records to it made by
// newWriter.
func createRecords(path string, now func() time.Time, newWriter func(io.Writer, func() time.Time) *RecordWriter) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	rw := newWriter(f, now)
	rw.path = path
	rw.close = func() error {
		err := f.Sync()
		if e := f.Close(); err == nil {
			err = e
		}
		return err
	}
	return rw, nil
}

// NewRecordWriter returns a writer of records to w, with its writing
// goroutine started; Close stops it (and does not close w). now reads the
// clock that stamps records as they are added and tells when they are due
// (nil: time.Now); the wait until the oldest is due is the runtime's
// timer, so a test fakes both at once with testing/synctest.
func NewRecordWriter(w io.Writer, now func() time.Time) *RecordWriter {
	return newRecordWriter(w, now, AppendRecord, nil)
}

// newRecordWriter returns a writer of records encoded by enc, after head
// (nil: none), which it writes before it returns.
func newRecordWriter(w io.Writer, now func() time.Time, enc func([]byte, *metrics.Sample) []byte, head []byte) *RecordWriter {
	if now == nil {
		now = time.Now
	}
	rw := &RecordWriter{
		w: w, enc: enc, now: now, wake: make(chan struct{}, 1), writeDone: make(chan struct{}),
		cur: make([]byte, 0, recordChunk+4096),
	}
	if len(head) > 0 { // written at once: a file without records has it
		_, rw.err = w.Write(head)
	}
	rw.cond = sync.NewCond(&rw.mu)
	go rw.loop()
	return rw
}

// Add encodes s's record into memory, for the writer's goroutine to write.
func (rw *RecordWriter) Add(s *metrics.Sample) {
	rw.n++
	now := rw.now()
	rw.mu.Lock()
	first := rw.curN == 0
	if first {
		rw.curAt = now
	}
	rw.cur = rw.enc(rw.cur, s)
	rw.curN++
	full := len(rw.cur) >= recordChunk
	rw.noteBacklog(now)
	rw.mu.Unlock()
	if first || full { // a new deadline, or a chunk to write now
		rw.signal()
	}
}

var _ metrics.Sink = (*RecordWriter)(nil)

// signal wakes the writer's goroutine (never waits).
func (rw *RecordWriter) signal() {
	select {
	case rw.wake <- struct{}{}:
	default:
	}
}

// noteBacklog keeps the records waiting as the largest backlog when the
// oldest of them was added 2×FlushInterval or more before now (rw.mu
// held): a writer that keeps up has written it by then.
func (rw *RecordWriter) noteBacklog(now time.Time) {
	oldest := rw.busy.at
	if rw.busy.n == 0 {
		if rw.curN == 0 {
			return
		}
		oldest = rw.curAt
	}
	if now.Sub(oldest) < 2*FlushInterval {
		return
	}
	rw.max.Records = max(rw.max.Records, rw.busy.n+rw.curN)
	rw.max.Bytes = max(rw.max.Bytes, rw.busy.bytes+int64(len(rw.cur)))
}

// loop writes the records in order until Close: those encoded so far as
// soon as they make a chunk, their oldest is due (FlushInterval after its
// Add), or Sync or Close asks.
func (rw *RecordWriter) loop() {
	defer close(rw.writeDone)
	timer := time.NewTimer(FlushInterval)
	timer.Stop()
	defer timer.Stop()
	for {
		rw.mu.Lock()
		if rw.curN == 0 {
			rw.urgent = false
			if rw.quit {
				rw.mu.Unlock()
				return
			}
		}
		take := rw.curN > 0 && (rw.urgent || rw.quit || len(rw.cur) >= recordChunk)
		var wait time.Duration // until cur is due (0: nothing to write)
		if rw.curN > 0 && !take {
			wait = rw.curAt.Add(FlushInterval).Sub(rw.now())
			take = wait <= 0
		}
		if !take {
			rw.mu.Unlock()
			var due <-chan time.Time
			if wait > 0 {
				timer.Reset(wait)
				due = timer.C
			}
			select {
			case <-rw.wake:
				timer.Stop()
			case <-due:
			}
			continue
		}
		b := rw.cur
		rw.busy = batch{n: rw.curN, bytes: int64(len(b)), at: rw.curAt}
		rw.cur, rw.curN, rw.curAt, rw.urgent = rw.spare[:0], 0, time.Time{}, false
		if rw.cur == nil {
			rw.cur = make([]byte, 0, recordChunk+4096)
		}
		rw.spare = nil
		failed := rw.err != nil
		rw.mu.Unlock()
		var err error
		if !failed { // after an error the file is not written again
			_, err = rw.w.Write(b)
		}
		rw.mu.Lock()
		if err != nil && rw.err == nil {
			rw.err = err
		}
		rw.busy = batch{}
		if cap(b) <= 4*recordChunk {
			rw.spare = b
		}
		rw.noteBacklog(rw.now())
		rw.mu.Unlock()
		rw.cond.Broadcast()
	}
}

// Sync has the writer write every record added so far and waits until it
// has (a process about to exit), and reports the writer's first error.
func (rw *RecordWriter) Sync() error {
	rw.mu.Lock()
	rw.urgent = true
	rw.mu.Unlock()
	rw.signal()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for (rw.curN > 0 || rw.busy.n > 0) && rw.err == nil {
		rw.cond.Wait()
	}
	return rw.err
}

// Count is the number of records added.
func (rw *RecordWriter) Count() int64 { return rw.n }

// MaxBacklog is the most records (and their bytes) waiting for the writer
// at a time when one of them had waited 2×FlushInterval or longer: zero
// while the writer kept up.
func (rw *RecordWriter) MaxBacklog() Backlog {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.max
}

// Close writes every record, stops the writer, syncs and closes the file,
// and reports the first error. Calling it again returns nil.
func (rw *RecordWriter) Close() error {
	if rw.closed {
		return nil
	}
	rw.closed = true
	rw.mu.Lock()
	rw.quit = true
	rw.mu.Unlock()
	rw.signal()
	<-rw.writeDone
	rw.mu.Lock()
	err := rw.err
	rw.mu.Unlock()
	if rw.close != nil {
		if e := rw.close(); err == nil {
			err = e
		}
	}
	return err
}

// recordField is one field of the per-request record: its key, how it is
// written from a Sample, and how it is read back into a record.Request. The
// table recordFields is the one definition of the record format: the
// writer (AppendRecord) and the reader (ParseRecord) both walk it.
type recordField struct {
	key  string
	head string // `,"key":` (the first field without its comma)
	// omit leaves the field out of a record (nil: always written).
	omit func(s *metrics.Sample) bool
	put  func(b []byte, s *metrics.Sample) []byte
	// get reads the field's value x (nil when absent) into r. Fields are
	// read in table order: a field may use those before it.
	get func(x *fastjson.Value, r *record.Request)
	// jsonlOnly: not a column of --results-csv (the agentic fields: the
	// CSV's columns stay those of every run).
	jsonlOnly bool
}

func field(key string, put func([]byte, *metrics.Sample) []byte, get func(*fastjson.Value, *record.Request)) recordField {
	return recordField{key: key, head: `,"` + key + `":`, put: put, get: get}
}

// OutcomeCancelled is the record's "outcome" of a request the client cut
// at its planned cut (--cancel-share). The field is written for those
// only: "status" stays the HTTP status (200 when the cut came after the
// response had started), and a record without "outcome" is a completion
// or a failure as before, told apart by error_class.
const OutcomeCancelled = "cancelled"

// recordFields are the record's fields in the order they are written:
// index, request_id (with --request-id-prefix: the X-Request-Id sent),
// scheduled_s, sent_s, ttft_ms (null when no token arrived), e2e_ms,
// itl_ms, input_len, output_len, prompt_tokens, completion_tokens,
// cached_tokens and images; for image generations generate_images and
// generated_images; then model, status, error_class, error and retries;
// for a request with a planned cut, cancel_after_ms, and when the cut
// ended it, outcome "cancelled"; for a session's turn, session, turn and
// history_tokens; with several endpoints, endpoint (the index of the one
// the request went to); for an answer with reasoning or tool calls,
// ttfo_ms (time to first output token: content or a tool call) and
// reasoning_tokens; for one with tool calls, tool_calls, tool_args_invalid
// and tool_call_ttft_ms; for one checked against --response-format,
// structured ("valid" or "invalid"); with --http-phases, http_reused
// (true on a pooled connection), http_connect_ms and http_tls_ms (on a
// new connection; TLS over https only), http_write_ms and http_wait_ms
// (the write's end to the response's first byte) — in the JSON records
// only, not the CSV's columns.
var recordFields = func() []recordField {
	fs := []recordField{
		field("index",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, s.Index, 10) },
			func(x *fastjson.Value, r *record.Request) { r.Index = getInt64(x) }),
		field("request_id",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.RequestID) },
			func(x *fastjson.Value, r *record.Request) { r.RequestID = getString(x) }),
		field("scheduled_s",
			func(b []byte, s *metrics.Sample) []byte { return appendSeconds(b, s.Scheduled) },
			func(x *fastjson.Value, r *record.Request) { r.Scheduled = seconds(x) }),
		field("sent_s",
			func(b []byte, s *metrics.Sample) []byte { return appendSeconds(b, s.Sent) },
			func(x *fastjson.Value, r *record.Request) { r.Sent = seconds(x) }),
		field("ttft_ms",
			func(b []byte, s *metrics.Sample) []byte {
				if s.FirstToken <= 0 {
					return append(b, "null"...)
				}
				return appendMillis(b, s.TTFT)
			},
			func(x *fastjson.Value, r *record.Request) {
				if x != nil && x.Type() == fastjson.TypeNumber {
					r.FirstToken = r.Sent + millis(x.GetFloat64())
					r.TokenTimes = append(r.TokenTimes, r.FirstToken)
				}
			}),
		field("e2e_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.E2E) },
			func(x *fastjson.Value, r *record.Request) { r.End = r.Sent + millis(getFloat(x)) }),
		field("itl_ms",
			func(b []byte, s *metrics.Sample) []byte {
				b = append(b, '[')
				for i := 1; i < len(s.TokenTimes); i++ {
					if i > 1 {
						b = append(b, ',')
					}
					b = appendMillis(b, s.TokenTimes[i]-s.TokenTimes[i-1])
				}
				return append(b, ']')
			},
			func(x *fastjson.Value, r *record.Request) {
				if r.FirstToken == 0 || x == nil || x.Type() != fastjson.TypeArray {
					return
				}
				at := r.FirstToken
				for _, g := range x.GetArray() {
					at += millis(g.GetFloat64())
					r.TokenTimes = append(r.TokenTimes, at)
				}
			}),
		field("input_len",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.InputLen), 10) },
			func(x *fastjson.Value, r *record.Request) { r.InputLen = getInt(x) }),
		field("output_len",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.OutputLen), 10) },
			func(x *fastjson.Value, r *record.Request) { r.OutputLen = getInt(x) }),
		field("prompt_tokens",
			func(b []byte, s *metrics.Sample) []byte { return appendOptInt(b, s.PromptTokens) },
			func(x *fastjson.Value, r *record.Request) { r.PromptTokens = optInt(x) }),
		field("completion_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.CompletionTokens), 10) },
			func(x *fastjson.Value, r *record.Request) { r.CompletionTokens = getInt(x) }),
		field("cached_tokens",
			func(b []byte, s *metrics.Sample) []byte { return appendOptInt(b, s.CachedTokens) },
			func(x *fastjson.Value, r *record.Request) { r.CachedTokens = optInt(x) }),
		field("images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Images), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Images = getInt(x) }),
		field("generate_images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Generate), 10) },
			func(x *fastjson.Value, r *record.Request) {
				if r.Generate = getInt(x); r.Generate > 0 {
					r.Measure = api.MeasureImages // an image generation measures no tokens
				}
			}),
		field("generated_images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Generated), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Generated = getInt(x) }),
		field("model",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.Model) },
			func(x *fastjson.Value, r *record.Request) { r.Model = getString(x) }),
		field("status",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Status), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Status = getInt(x) }),
		field("error_class",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.ErrorClass) },
			func(x *fastjson.Value, r *record.Request) { r.ErrorClass = getString(x) }),
		field("error",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.Error) },
			func(x *fastjson.Value, r *record.Request) {
				r.Error = getString(x)
				if r.ErrorClass == "" && r.Error != "" {
					r.ErrorClass = "error" // a record written before error classes existed
				}
			}),
		field("retries",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Retries), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Retries = getInt(x) }),
		field("cancel_after_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.CancelAfter) },
			func(x *fastjson.Value, r *record.Request) {
				if x != nil {
					r.CancelAfter = millis(getFloat(x))
				}
			}),
		field("outcome",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, OutcomeCancelled) },
			func(x *fastjson.Value, r *record.Request) { r.Cancelled = getString(x) == OutcomeCancelled }),
		field("session",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, s.Session, 10) },
			func(x *fastjson.Value, r *record.Request) { r.Session = getInt64(x) }),
		field("turn",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Turn), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Turn = getInt(x) }),
		field("history_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.HistoryTokens), 10) },
			func(x *fastjson.Value, r *record.Request) { r.HistoryTokens = getInt(x) }),
		field("branch",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Agent.Branch), 10) },
			func(x *fastjson.Value, r *record.Request) {
				if x != nil {
					r.Agent.On, r.Agent.Branch, r.Agent.Waited = true, getInt(x), -1
				}
			}),
		field("tool_wait_ms",
			func(b []byte, s *metrics.Sample) []byte {
				if s.Agent.Waited < 0 {
					return append(b, "null"...)
				}
				return appendMillis(b, s.Agent.Waited)
			},
			func(x *fastjson.Value, r *record.Request) {
				if x != nil && x.Type() == fastjson.TypeNumber {
					r.Agent.Waited = time.Duration(x.GetFloat64() * 1e6)
				}
			}),
		field("expected_cached_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Agent.Expected), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Agent.Expected = getInt(x) }),
		field("endpoint",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Endpoint), 10) },
			func(x *fastjson.Value, r *record.Request) { r.Endpoint = optInt(x) + 1 }),
		field("ttfo_ms",
			func(b []byte, s *metrics.Sample) []byte {
				if s.TTFO <= 0 {
					return append(b, "null"...)
				}
				return appendMillis(b, s.TTFO)
			},
			func(x *fastjson.Value, r *record.Request) {
				switch {
				case x == nil: // no reasoning: the first output is the first token
					r.FirstOutput = r.FirstToken
				case x.Type() == fastjson.TypeNumber:
					r.FirstOutput = r.Sent + millis(x.GetFloat64())
				}
			}),
		field("reasoning_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.ReasoningTokens), 10) },
			func(x *fastjson.Value, r *record.Request) { r.ReasoningTokens = getInt(x) }),
		field("tool_calls",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.ToolCalls), 10) },
			func(x *fastjson.Value, r *record.Request) { r.ToolCalls = getInt(x) }),
		field("tool_args_invalid",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.ToolArgsInvalid), 10) },
			func(x *fastjson.Value, r *record.Request) { r.ToolArgsInvalid = getInt(x) }),
		field("tool_call_ttft_ms",
			func(b []byte, s *metrics.Sample) []byte {
				if !s.HasToolTTFT {
					return append(b, "null"...)
				}
				return appendMillis(b, s.ToolTTFT)
			},
			func(x *fastjson.Value, r *record.Request) {
				if x != nil && x.Type() == fastjson.TypeNumber {
					r.FirstToolCall = r.Sent + millis(x.GetFloat64())
				}
			}),
		field("structured",
			func(b []byte, s *metrics.Sample) []byte {
				if s.Structured == metrics.StructuredInvalid {
					return appendString(b, "invalid")
				}
				return appendString(b, "valid")
			},
			func(x *fastjson.Value, r *record.Request) {
				switch getString(x) {
				case "valid":
					r.Structured = metrics.StructuredValid
				case "invalid":
					r.Structured = metrics.StructuredInvalid
				}
			}),
		field("http_reused",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendBool(b, s.HTTP.Reused) },
			func(x *fastjson.Value, r *record.Request) {
				if x != nil {
					r.HTTP = record.Phases{Measured: true, Reused: x.Type() == fastjson.TypeTrue}
				}
			}),
		field("http_connect_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.HTTP.Connect) },
			func(x *fastjson.Value, r *record.Request) { r.HTTP.Connect = millis(getFloat(x)) }),
		field("http_tls_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.HTTP.TLS) },
			func(x *fastjson.Value, r *record.Request) { r.HTTP.TLS = millis(getFloat(x)) }),
		field("http_write_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.HTTP.Write) },
			func(x *fastjson.Value, r *record.Request) { r.HTTP.Write = millis(getFloat(x)) }),
		field("http_wait_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.HTTP.Wait) },
			func(x *fastjson.Value, r *record.Request) { r.HTTP.Wait = millis(getFloat(x)) }),
	}
	fs[0].head = `{"index":`
	notGeneration := func(s *metrics.Sample) bool { return !s.Generation }
	notSession := func(s *metrics.Sample) bool { return s.Turn == 0 }
	for i := range fs {
		switch fs[i].key {
		case "generate_images", "generated_images":
			fs[i].omit = notGeneration
		case "session", "turn", "history_tokens":
			fs[i].omit = notSession
		case "branch", "tool_wait_ms", "expected_cached_tokens":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.Agent.On }
			fs[i].jsonlOnly = true
		case "endpoint":
			fs[i].omit = func(s *metrics.Sample) bool { return s.Endpoint < 0 }
		case "cancel_after_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return s.CancelAfter <= 0 }
		case "outcome":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.Cancelled }
		case "ttfo_ms", "reasoning_tokens":
			fs[i].omit = func(s *metrics.Sample) bool { return s.ReasoningTokens == 0 && s.ToolCalls == 0 }
		case "tool_calls", "tool_args_invalid", "tool_call_ttft_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return s.ToolCalls == 0 }
		case "structured":
			fs[i].omit = func(s *metrics.Sample) bool { return s.Structured == metrics.StructuredUnchecked }
		case "request_id":
			fs[i].omit = func(s *metrics.Sample) bool { return s.RequestID == "" }
			fs[i].jsonlOnly = true
		case "http_reused", "http_write_ms", "http_wait_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.HTTP.Measured }
			fs[i].jsonlOnly = true
		case "http_connect_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.HTTP.Measured || s.HTTP.Reused }
			fs[i].jsonlOnly = true
		case "http_tls_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.HTTP.Measured || s.HTTP.TLS <= 0 }
			fs[i].jsonlOnly = true
		}
	}
	return fs
}()

// AppendRecord appends s as one JSON line (see recordFields).
func AppendRecord(b []byte, s *metrics.Sample) []byte {
	for i := range recordFields {
		f := &recordFields[i]
		if f.omit != nil && f.omit(s) {
			continue
		}
		b = append(b, f.head...)
		b = f.put(b, s)
	}
	return append(b, "}\n"...)
}

// ParseRecord reads one record (a parsed JSON object) into r, which it
// resets first (keeping its token-time storage). Absent fields read as
// zero, absent usage as not given.
func ParseRecord(v *fastjson.Value, r *record.Request) error {
	if v.Type() != fastjson.TypeObject || !v.Exists("scheduled_s") {
		return errors.New("not a per-request record (no scheduled_s)")
	}
	r.Reset()
	for i := range recordFields {
		f := &recordFields[i]
		f.get(v.Get(f.key), r)
	}
	return nil
}

// Values read as fastjson's Get* do: 0 or "" when absent or of another
// type.
func getInt64(x *fastjson.Value) int64   { return x.GetInt64() }
func getInt(x *fastjson.Value) int       { return x.GetInt() }
func getFloat(x *fastjson.Value) float64 { return x.GetFloat64() }
func getString(x *fastjson.Value) string { return string(x.GetStringBytes()) }

// optInt reads a count that may be null (not given): -1.
func optInt(x *fastjson.Value) int {
	if x == nil || x.Type() != fastjson.TypeNumber {
		return -1
	}
	return x.GetInt()
}

func seconds(x *fastjson.Value) time.Duration {
	return time.Duration(math.Round(getFloat(x) * 1e9))
}

func millis(f float64) time.Duration { return time.Duration(math.Round(f * 1e6)) }

func appendSeconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
}

func appendMillis(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64)
}

func appendOptInt(b []byte, v int) []byte {
	if v < 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(v), 10)
}

// appendString appends s as a JSON string, escaping what JSON and HTML
// viewers need escaped and replacing invalid UTF-8.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
