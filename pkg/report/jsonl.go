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

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// FlushInterval bounds how long a finished record may wait in memory before
// it is handed to the writer: a killed run loses at most the records of
// this last interval (and those the writer had not written yet, see
// RecordWriter).
const FlushInterval = 100 * time.Millisecond

// recordChunk is how many bytes of records are handed to the writer at
// once (at the latest every FlushInterval).
const recordChunk = 64 << 10

// RecordWriter streams one JSON object per finished request (JSON Lines)
// without ever making its caller wait for the disk: Add encodes the record
// into memory, and a goroutine of the writer's own writes the encoded
// chunks to the file in order. Nothing is dropped: a disk slower than the
// run makes the queue grow, and the largest backlog is kept (MaxBacklog).
// Add, Flush, Sync and Close are called from one goroutine.
type RecordWriter struct {
	w     io.Writer
	close func() error // syncs and closes the file (nil: nothing to close)

	// The producer's side.
	cur       []byte // records not yet handed to the writer
	curN      int64
	lastHand  time.Time
	n         int64
	closed    bool
	writeDone chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond // signals the writer (work, close) and Sync (progress)
	queue   []chunk    // handed over, not yet written, in order
	free    [][]byte   // written chunks' storage, for reuse
	pending Backlog    // handed over, not yet written (the chunk being written too)
	busyAt  time.Time  // when the chunk being written was handed over (zero: idle)
	max     Backlog
	err     error
	quit    bool
}

// chunk is encoded records handed to the writer.
type chunk struct {
	b  []byte
	n  int64
	at time.Time // handed over
}

// Backlog is an amount of records waiting for the writer.
type Backlog struct {
	Records, Bytes int64
}

// CreateRecords creates (truncates) path for per-request records.
func CreateRecords(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	rw := NewRecordWriter(f)
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
// goroutine started; Close stops it (and does not close w).
func NewRecordWriter(w io.Writer) *RecordWriter {
	rw := &RecordWriter{w: w, lastHand: time.Now(), writeDone: make(chan struct{}), cur: make([]byte, 0, recordChunk+4096)}
	rw.cond = sync.NewCond(&rw.mu)
	go rw.loop()
	return rw
}

// Add encodes s's record. The records are handed to the writer when a
// chunk is full or FlushInterval has passed since the last hand-over.
func (rw *RecordWriter) Add(s *metrics.Sample) {
	rw.cur = AppendRecord(rw.cur, s)
	rw.curN++
	rw.n++
	if len(rw.cur) >= recordChunk || time.Since(rw.lastHand) >= FlushInterval {
		rw.handOver()
	}
}

var _ metrics.Sink = (*RecordWriter)(nil)

// handOver queues the records encoded so far for the writer. When records
// handed over earlier have waited FlushInterval or more without being
// written, the writer has fallen behind: what is waiting is a backlog.
func (rw *RecordWriter) handOver() {
	now := time.Now()
	rw.lastHand = now
	if len(rw.cur) == 0 {
		return
	}
	rw.mu.Lock()
	oldest := rw.busyAt
	if oldest.IsZero() && len(rw.queue) > 0 {
		oldest = rw.queue[0].at
	}
	if !oldest.IsZero() && now.Sub(oldest) >= FlushInterval {
		rw.max.Records = max(rw.max.Records, rw.pending.Records)
		rw.max.Bytes = max(rw.max.Bytes, rw.pending.Bytes)
	}
	rw.queue = append(rw.queue, chunk{rw.cur, rw.curN, now})
	rw.pending.Records += rw.curN
	rw.pending.Bytes += int64(len(rw.cur))
	var next []byte
	if n := len(rw.free); n > 0 {
		next, rw.free = rw.free[n-1][:0], rw.free[:n-1]
	}
	rw.mu.Unlock()
	rw.cond.Broadcast()
	if next == nil {
		next = make([]byte, 0, recordChunk+4096)
	}
	rw.cur, rw.curN = next, 0
}

// loop writes the queued chunks in order until Close.
func (rw *RecordWriter) loop() {
	defer close(rw.writeDone)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for {
		for len(rw.queue) == 0 && !rw.quit {
			rw.cond.Wait()
		}
		if len(rw.queue) == 0 {
			return
		}
		c := rw.queue[0]
		rw.queue[0] = chunk{}
		rw.queue = rw.queue[1:]
		failed := rw.err != nil
		rw.busyAt = c.at
		rw.mu.Unlock()
		var err error
		if !failed { // after an error the file is not written again
			_, err = rw.w.Write(c.b)
		}
		rw.mu.Lock()
		if err != nil && rw.err == nil {
			rw.err = err
		}
		rw.busyAt = time.Time{}
		rw.pending.Records -= c.n
		rw.pending.Bytes -= int64(len(c.b))
		if len(rw.free) < 2 && cap(c.b) <= 4*recordChunk {
			rw.free = append(rw.free, c.b)
		}
		rw.cond.Broadcast()
	}
}

// Flush hands the records encoded so far to the writer without waiting
// for them to be written, and reports the writer's first error.
func (rw *RecordWriter) Flush() error {
	rw.handOver()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.err
}

// Sync hands the records encoded so far to the writer and waits until
// every record is written (a process about to exit).
func (rw *RecordWriter) Sync() error {
	rw.handOver()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for rw.pending.Records > 0 && rw.err == nil {
		rw.cond.Wait()
	}
	return rw.err
}

// Count is the number of records added.
func (rw *RecordWriter) Count() int64 { return rw.n }

// MaxBacklog is the most records (and their bytes) waiting for the writer
// when more arrived while some had waited FlushInterval or longer: zero
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
	rw.handOver()
	rw.mu.Lock()
	rw.quit = true
	rw.mu.Unlock()
	rw.cond.Broadcast()
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
// written from a Sample, and how it is read back into a client.Result. The
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
	get func(x *fastjson.Value, r *client.Result)
}

func field(key string, put func([]byte, *metrics.Sample) []byte, get func(*fastjson.Value, *client.Result)) recordField {
	return recordField{key: key, head: `,"` + key + `":`, put: put, get: get}
}

// OutcomeCancelled is the record's "outcome" of a request the client cut
// at its planned cut (--cancel-share). The field is written for those
// only: "status" stays the HTTP status (200 when the cut came after the
// response had started), and a record without "outcome" is a completion
// or a failure as before, told apart by error_class.
const OutcomeCancelled = "cancelled"

// recordFields are the record's fields in the order they are written:
// index, scheduled_s, sent_s, ttft_ms (null when no token arrived), e2e_ms,
// itl_ms, input_len, output_len, prompt_tokens, completion_tokens,
// cached_tokens and images; for image generations generate_images and
// generated_images; then model, status, error_class, error and retries;
// for a request with a planned cut, cancel_after_ms, and when the cut
// ended it, outcome "cancelled"; for a session's turn, session, turn and
// history_tokens; with several endpoints, endpoint (the index of the one
// the request went to).
var recordFields = func() []recordField {
	fs := []recordField{
		field("index",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, s.Index, 10) },
			func(x *fastjson.Value, r *client.Result) { r.Index = getInt64(x) }),
		field("scheduled_s",
			func(b []byte, s *metrics.Sample) []byte { return appendSeconds(b, s.Scheduled) },
			func(x *fastjson.Value, r *client.Result) { r.Scheduled = seconds(x) }),
		field("sent_s",
			func(b []byte, s *metrics.Sample) []byte { return appendSeconds(b, s.Sent) },
			func(x *fastjson.Value, r *client.Result) { r.Sent = seconds(x) }),
		field("ttft_ms",
			func(b []byte, s *metrics.Sample) []byte {
				if s.FirstToken <= 0 {
					return append(b, "null"...)
				}
				return appendMillis(b, s.TTFT)
			},
			func(x *fastjson.Value, r *client.Result) {
				if x != nil && x.Type() == fastjson.TypeNumber {
					r.FirstToken = r.Sent + millis(x.GetFloat64())
					r.TokenTimes = append(r.TokenTimes, r.FirstToken)
				}
			}),
		field("e2e_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.E2E) },
			func(x *fastjson.Value, r *client.Result) { r.End = r.Sent + millis(getFloat(x)) }),
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
			func(x *fastjson.Value, r *client.Result) {
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
			func(x *fastjson.Value, r *client.Result) { r.InputLen = getInt(x) }),
		field("output_len",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.OutputLen), 10) },
			func(x *fastjson.Value, r *client.Result) { r.OutputLen = getInt(x) }),
		field("prompt_tokens",
			func(b []byte, s *metrics.Sample) []byte { return appendOptInt(b, s.PromptTokens) },
			func(x *fastjson.Value, r *client.Result) { r.PromptTokens = optInt(x) }),
		field("completion_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.CompletionTokens), 10) },
			func(x *fastjson.Value, r *client.Result) { r.CompletionTokens = getInt(x) }),
		field("cached_tokens",
			func(b []byte, s *metrics.Sample) []byte { return appendOptInt(b, s.CachedTokens) },
			func(x *fastjson.Value, r *client.Result) { r.CachedTokens = optInt(x) }),
		field("images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Images), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Images = getInt(x) }),
		field("generate_images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Generate), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Generate = getInt(x) }),
		field("generated_images",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Generated), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Generated = getInt(x) }),
		field("model",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.Model) },
			func(x *fastjson.Value, r *client.Result) { r.Model = getString(x) }),
		field("status",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Status), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Status = getInt(x) }),
		field("error_class",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.ErrorClass) },
			func(x *fastjson.Value, r *client.Result) { r.ErrorClass = getString(x) }),
		field("error",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, s.Error) },
			func(x *fastjson.Value, r *client.Result) {
				r.Error = getString(x)
				if r.ErrorClass == "" && r.Error != "" {
					r.ErrorClass = "error" // a record written before error classes existed
				}
			}),
		field("retries",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Retries), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Retries = getInt(x) }),
		field("cancel_after_ms",
			func(b []byte, s *metrics.Sample) []byte { return appendMillis(b, s.CancelAfter) },
			func(x *fastjson.Value, r *client.Result) {
				if x != nil {
					r.CancelAfter = millis(getFloat(x))
				}
			}),
		field("outcome",
			func(b []byte, s *metrics.Sample) []byte { return appendString(b, OutcomeCancelled) },
			func(x *fastjson.Value, r *client.Result) { r.Cancelled = getString(x) == OutcomeCancelled }),
		field("session",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, s.Session, 10) },
			func(x *fastjson.Value, r *client.Result) { r.Session = getInt64(x) }),
		field("turn",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Turn), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Turn = getInt(x) }),
		field("history_tokens",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.HistoryTokens), 10) },
			func(x *fastjson.Value, r *client.Result) { r.HistoryTokens = getInt(x) }),
		field("endpoint",
			func(b []byte, s *metrics.Sample) []byte { return strconv.AppendInt(b, int64(s.Endpoint), 10) },
			func(x *fastjson.Value, r *client.Result) { r.Endpoint = optInt(x) + 1 }),
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
		case "endpoint":
			fs[i].omit = func(s *metrics.Sample) bool { return s.Endpoint < 0 }
		case "cancel_after_ms":
			fs[i].omit = func(s *metrics.Sample) bool { return s.CancelAfter <= 0 }
		case "outcome":
			fs[i].omit = func(s *metrics.Sample) bool { return !s.Cancelled }
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
func ParseRecord(v *fastjson.Value, r *client.Result) error {
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
