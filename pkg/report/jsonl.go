package report

import (
	"bufio"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

// FlushInterval bounds how long a finished record may wait in memory before
// it is written to the results file: a killed run loses at most the records
// of this last interval.
const FlushInterval = 100 * time.Millisecond

// RecordWriter streams one JSON object per finished request (JSON Lines).
// It is used by one goroutine.
type RecordWriter struct {
	f         *os.File
	w         *bufio.Writer
	line      []byte
	lastFlush time.Time
	n         int64
}

// CreateRecords creates (truncates) path for per-request records.
func CreateRecords(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &RecordWriter{f: f, w: bufio.NewWriterSize(f, 256<<10), lastFlush: time.Now()}, nil
}

// Write appends r's record. The buffer is written to the file when
// FlushInterval has passed since the last write to the file.
func (rw *RecordWriter) Write(r *client.Result) error {
	rw.line = AppendRecord(rw.line[:0], r)
	if _, err := rw.w.Write(rw.line); err != nil {
		return err
	}
	rw.n++
	if time.Since(rw.lastFlush) >= FlushInterval {
		return rw.Flush()
	}
	return nil
}

// Flush writes buffered records to the file.
func (rw *RecordWriter) Flush() error {
	rw.lastFlush = time.Now()
	return rw.w.Flush()
}

// Count is the number of records written.
func (rw *RecordWriter) Count() int64 { return rw.n }

// Close flushes, syncs and closes the file.
func (rw *RecordWriter) Close() error {
	err := rw.w.Flush()
	if e := rw.f.Sync(); err == nil {
		err = e
	}
	if e := rw.f.Close(); err == nil {
		err = e
	}
	return err
}

// AppendRecord appends r as one JSON line with the fields of the results
// contract: index, scheduled_s, sent_s, ttft_ms, e2e_ms, itl_ms, input_len,
// output_len, prompt_tokens, completion_tokens, model, status, error; plus
// error_class, cached_tokens, images and retries, and for image generations
// generate_images and generated_images (their ttft_ms is null).
func AppendRecord(b []byte, r *client.Result) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, r.Index, 10)
	b = append(b, `,"scheduled_s":`...)
	b = appendSeconds(b, r.Scheduled)
	b = append(b, `,"sent_s":`...)
	b = appendSeconds(b, r.Sent)
	b = append(b, `,"ttft_ms":`...)
	if r.FirstToken > 0 {
		b = appendMillis(b, r.TTFT())
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"e2e_ms":`...)
	b = appendMillis(b, r.E2E())
	b = append(b, `,"itl_ms":[`...)
	for i := 1; i < len(r.TokenTimes); i++ {
		if i > 1 {
			b = append(b, ',')
		}
		b = appendMillis(b, r.TokenTimes[i]-r.TokenTimes[i-1])
	}
	b = append(b, `],"input_len":`...)
	b = strconv.AppendInt(b, int64(r.InputLen), 10)
	b = append(b, `,"output_len":`...)
	b = strconv.AppendInt(b, int64(r.OutputLen), 10)
	b = append(b, `,"prompt_tokens":`...)
	b = appendOptInt(b, r.PromptTokens)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.CompletionTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = appendOptInt(b, r.CachedTokens)
	b = append(b, `,"images":`...)
	b = strconv.AppendInt(b, int64(r.Images), 10)
	if r.Generate > 0 { // image generation: images asked for and returned
		b = append(b, `,"generate_images":`...)
		b = strconv.AppendInt(b, int64(r.Generate), 10)
		b = append(b, `,"generated_images":`...)
		b = strconv.AppendInt(b, int64(r.Generated), 10)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, r.Model)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"error_class":`...)
	b = appendString(b, r.ErrorClass)
	b = append(b, `,"error":`...)
	b = appendString(b, r.Error)
	b = append(b, `,"retries":`...)
	b = strconv.AppendInt(b, int64(r.Retries), 10)
	return append(b, "}\n"...)
}

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
