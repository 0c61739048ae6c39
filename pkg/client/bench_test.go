package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// A vLLM completion chunk and the stream of a 16-token completion.
const benchChunk = `{"id":"cmpl-8f1c2a","object":"text_completion","created":1732200000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`

func benchStream(tokens int) []byte {
	var b strings.Builder
	for range tokens {
		b.WriteString("data: " + benchChunk + "\n\n")
	}
	b.WriteString(`data: {"id":"cmpl-8f1c2a","object":"text_completion","created":1732200000,"model":"m","choices":[],"usage":{"prompt_tokens":256,"total_tokens":272,"completion_tokens":16}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// benchStreamSetup returns what decoding a 16-token stream needs: a
// streaming client, the stream, a decoder and a result with room for the
// token times.
func benchStreamSetup(b *testing.B) (*Client, []byte, *decoder, *Result) {
	c, err := New(Config{BaseURL: "http://x", API: api.VLLM, Stream: true, Epoch: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	return c, benchStream(16), new(decoder), &Result{TokenTimes: make([]time.Duration, 0, 64)}
}

// BenchmarkReadStream measures decoding a whole 16-token stream, as the
// client does for every response: line splitting, a timestamp per read,
// JSON decoding of every chunk.
func BenchmarkReadStream(b *testing.B) {
	c, stream, d, res := benchStreamSetup(b)
	benchRead(b, stream, res, func(r io.Reader, res *Result) error { return c.readStream(d, r, res) }, 16, -1)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/token")
}

// BenchmarkChunkSkim, BenchmarkChunkFastjson and BenchmarkChunkEncodingJSON
// compare decoding one chunk as the client does (skimmed), with the reused
// fastjson parser (the full decoder) and with encoding/json into
// go-openai's response type (docs/ARCHITECTURE.md).
func BenchmarkChunkSkim(b *testing.B) { benchmarkChunk(b, (*Client).chunk) }

// BenchmarkChunkSkimWhole skims every chunk whole, as the first chunk of
// a stream and one of another shape are (BenchmarkChunkSkim reads the
// same chunk again through its shape, as a stream's next token is).
func BenchmarkChunkSkimWhole(b *testing.B) {
	benchmarkChunk(b, func(c *Client, _ *decoder, data []byte, _ *Result) (tokenKind, bool, error) {
		kind, _ := skimChunk(data, c.chat)
		return kind, false, nil
	})
}

func BenchmarkChunkFastjson(b *testing.B) { benchmarkChunk(b, (*Client).parseChunk) }

// benchmarkChunk measures decode on one chunk of a vLLM client.
func benchmarkChunk(b *testing.B, decode func(*Client, *decoder, []byte, *Result) (tokenKind, bool, error)) {
	c, _ := New(Config{BaseURL: "http://x", API: api.VLLM})
	d := new(decoder)
	res := &Result{}
	data := []byte(benchChunk)
	b.ReportAllocs()
	for b.Loop() {
		if text, _, err := decode(c, d, data, res); err != nil || text != tokOutput {
			b.Fatal(err)
		}
	}
}

func BenchmarkChunkEncodingJSON(b *testing.B) {
	data := []byte(benchChunk)
	b.ReportAllocs()
	for b.Loop() {
		var v openai.CompletionResponse
		if err := json.Unmarshal(data, &v); err != nil || v.Choices[0].Text == "" {
			b.Fatal(err)
		}
	}
}

// benchWhole is a vLLM non-streamed completion of 128 tokens.
var benchWhole = `{"id":"cmpl-8f1c2a","object":"text_completion","created":1732200000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":"` +
	strings.Repeat(" the", 128) + `","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":1024,"total_tokens":1152,"completion_tokens":128,"prompt_tokens_details":{"cached_tokens":512}}}`

// BenchmarkWholeResponse compares reading a non-streamed answer as the
// client does (fastjson) against encoding/json into go-openai's response
// type, with the same figures taken (docs/ARCHITECTURE.md, Dependencies).
func BenchmarkWholeResponse(b *testing.B) {
	b.Run("fastjson", func(b *testing.B) {
		c, _ := New(Config{BaseURL: "http://x", API: api.VLLM})
		d := new(decoder)
		resp := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}}
		benchRead(b, []byte(benchWhole), &Result{}, func(r io.Reader, res *Result) error { return c.wire.read(c, d, resp, r, res) }, 128, 512)
	})
	b.Run("go-openai", func(b *testing.B) {
		benchRead(b, []byte(benchWhole), &Result{}, func(r io.Reader, res *Result) error {
			raw, err := io.ReadAll(r)
			var v openai.CompletionResponse
			if err == nil {
				err = json.Unmarshal(raw, &v)
			}
			if err != nil || len(v.Choices) == 0 || v.Usage == nil {
				return fmt.Errorf("%v: %d choices, usage %v", err, len(v.Choices), v.Usage)
			}
			res.PromptTokens, res.CompletionTokens = v.Usage.PromptTokens, v.Usage.CompletionTokens
			if v.Usage.PromptTokensDetails != nil {
				res.CachedTokens = v.Usage.PromptTokensDetails.CachedTokens
			}
			return nil
		}, 128, 512)
	})
}

// benchRead measures read on body, read afresh into res, reset, each
// time; res must then hold completion output tokens and cached cached ones
// (-1: not reported).
func benchRead(b *testing.B, body []byte, res *Result, read func(io.Reader, *Result) error, completion, cached int) {
	r := bytes.NewReader(body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body)
		res.Reset()
		if err := read(r, res); err != nil || res.CompletionTokens != completion || res.CachedTokens != cached {
			b.Fatal(err, res.CompletionTokens, res.CachedTokens)
		}
	}
}

// BenchmarkAppendBody measures encoding a request body around a prompt.
func BenchmarkAppendBody(b *testing.B) {
	c, _ := New(Config{BaseURL: "http://x", API: api.VLLM, Model: "meta-llama/Llama-3.1-8B-Instruct", Stream: true, IgnoreEOS: true, ExtraBody: []byte(`{"top_k":5}`)})
	prompt := []byte("[" + strings.Repeat("12345,", 1023) + "12345]")
	req := &Request{MaxTokens: 128, Prompt: prompt}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = c.AppendBody(buf[:0], req)
	}
}

// BenchmarkReadStreamStallWatch measures a 16-token stream read one event
// per read, as a server streaming token by token sends it, without and
// with --stall-timeout: the watch must cost a read nothing measurable.
func BenchmarkReadStreamStallWatch(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchStallWatch(b, false) })
	b.Run("on", func(b *testing.B) { benchStallWatch(b, true) })
}

func benchStallWatch(b *testing.B, on bool) {
	c, stream, d, res := benchStreamSetup(b)
	r := &eventReader{}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.rest = stream
		res.Reset()
		d.lines.watch = nil
		if on {
			d.lines.watch = watchStall(5*time.Minute, time.Now, func(error) {})
		}
		if err := c.readStream(d, r, res); err != nil || res.CompletionTokens != 16 {
			b.Fatal(err, res.CompletionTokens)
		}
		if on {
			d.lines.watch.end()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/token")
}

// eventReader returns one server-sent event per read.
type eventReader struct{ rest []byte }

func (e *eventReader) Read(p []byte) (int, error) {
	if len(e.rest) == 0 {
		return 0, io.EOF
	}
	n := len(e.rest)
	if i := bytes.Index(e.rest, []byte("\n\n")); i >= 0 {
		n = i + 2
	}
	n = copy(p, e.rest[:n])
	e.rest = e.rest[n:]
	return n, nil
}

// BenchmarkStallPerRead compares what a read costs the stall watch
// (touch: an atomic store) with re-arming a timer on every read.
func BenchmarkStallPerRead(b *testing.B) {
	b.Run("touch", func(b *testing.B) {
		w := watchStall(5*time.Minute, time.Now, func(error) {})
		defer w.end()
		now := time.Now()
		for b.Loop() {
			w.touch(now)
		}
	})
	b.Run("timer-reset", func(b *testing.B) {
		t := time.AfterFunc(5*time.Minute, func() {})
		defer t.Stop()
		for b.Loop() {
			t.Reset(5 * time.Minute)
		}
	})
}

// BenchmarkLeanRoundTrip measures one request through the lean transport on
// a kept-alive loopback connection: write the request, parse the response
// head, read a short body. The server is a bare loop over the connection so
// that most of the time is the client's.
func BenchmarkLeanRoundTrip(b *testing.B) {
	addr := serveReplies(b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	tr := newLeanTransport(4)
	defer tr.CloseIdleConnections()
	url := "http://" + addr + "/v1/completions"
	body := []byte(`{"model":"m","prompt":"hello","max_tokens":16,"stream":false}`)
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"fineserve-gen"}, "Authorization": {"Bearer sk-x"}}
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, newByteBody(body))
		req.Header = header
		req.ContentLength = int64(len(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
}

// chunkedEvents frames each event of stream as one HTTP/1.1 chunk, and
// ends with the last chunk: the bytes a streaming server writes.
func chunkedEvents(stream []byte) [][]byte {
	var out [][]byte
	for len(stream) > 0 {
		n := bytes.Index(stream, []byte("\n\n")) + 2
		out = append(out, fmt.Appendf(nil, "%x\r\n%s\r\n", n, stream[:n]))
		stream = stream[n:]
	}
	return append(out, []byte("0\r\n\r\n"))
}

// writeReader returns one of its writes per read, as a socket does when
// each event arrives on its own.
type writeReader struct {
	writes [][]byte
	i      int
}

func (w *writeReader) Read(p []byte) (int, error) {
	if w.i == len(w.writes) {
		return 0, io.EOF
	}
	n := copy(p, w.writes[w.i])
	w.i++
	return n, nil
}

// BenchmarkReadChunkedStream measures the client's user time per event of
// a chunked stream that arrives an event per read, from the connection's
// buffered reader to the token's time ("client"), beside the least a
// client can do with the same bytes: split lines in the connection's
// buffer and stamp each data line ("floor", streambench's floor client).
// Their difference is what the client adds per event in user space
// (docs/PERFORMANCE.md).
func BenchmarkReadChunkedStream(b *testing.B) {
	writes := chunkedEvents(benchStream(100))
	b.Run("client", func(b *testing.B) {
		c, err := New(Config{BaseURL: "http://x", API: api.VLLM, Stream: true, Epoch: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		d, res := new(decoder), &Result{TokenTimes: make([]time.Duration, 0, 128)}
		src := &writeReader{writes: writes}
		br := newConnReader(&countingConn{Conn: &readerConn{r: src}})
		for b.Loop() {
			src.i = 0
			br.Reset(&countingConn{Conn: &readerConn{r: src}})
			res.Reset()
			body := &chunkedBody{br: br, r: httputil.NewChunkedReader(br)}
			if err := c.readStream(d, body, res); err != nil || len(res.TokenTimes) != 100 {
				b.Fatal(err, res.CompletionTokens)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(writes)), "ns/event")
	})
	b.Run("floor", func(b *testing.B) {
		src := &writeReader{writes: writes}
		br := bufio.NewReaderSize(src, 4<<10)
		gaps := make([]time.Duration, 0, 128)
		for b.Loop() {
			src.i = 0
			br.Reset(src)
			gaps = floorLines(br, gaps[:0])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(writes)), "ns/event")
	})
}

// readerConn is a net.Conn that reads from r (benchmarks).
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c *readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanReader returns one of the writes sent on its channel per read and
// blocks until one comes, as a socket does; a closed channel is the end.
type chanReader chan []byte

func (c chanReader) Read(p []byte) (int, error) {
	w, ok := <-c
	if !ok {
		return 0, io.EOF
	}
	return copy(p, w), nil
}

// BenchmarkManyStreams measures what reading costs per event when many
// streams are open at once, each waiting in a goroutine of its own and
// woken for each of its events in turn, as at 10,000 streams: every
// event finds its stream's state (stack, buffers, decoder) out of the
// processor's cache, which a single warm stream (BenchmarkReadChunkedStream)
// never shows. The client reads as it does on a connection (through the
// lean transport's chunked body), the floor as streambench's floor does;
// both are woken the same way, so their difference is the client's own
// per-event cost at that many streams (docs/PERFORMANCE.md).
func BenchmarkManyStreams(b *testing.B) {
	writes := chunkedEvents(benchStream(100))
	for _, n := range []int{100, 10000} {
		for _, client := range []bool{true, false} {
			name := fmt.Sprintf("streams=%d/floor", n)
			if client {
				name = fmt.Sprintf("streams=%d/client", n)
			}
			b.Run(name, func(b *testing.B) {
				c, err := New(Config{BaseURL: "http://x", API: api.VLLM, Stream: true, Epoch: time.Now()})
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					chans := make([]chanReader, n)
					var wg sync.WaitGroup
					for i := range chans {
						chans[i] = make(chanReader)
						wg.Go(func() {
							if client {
								readManyClient(b, c, chans[i])
							} else {
								readManyFloor(chans[i])
							}
						})
					}
					for _, w := range writes {
						for _, ch := range chans {
							ch <- w
						}
					}
					for _, ch := range chans {
						close(ch)
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*len(writes)), "ns/event")
			})
		}
	}
}

// readManyClient reads one stream from ch as the client does.
func readManyClient(b *testing.B, c *Client, ch chanReader) {
	nc := &readerConn{r: ch, Conn: nopConn{}}
	lc := &leanConn{t: newLeanTransport(1), key: "k", nc: nc, cc: &countingConn{Conn: nc}}
	lc.br = newConnReader(lc.cc)
	body := &leanBody{c: lc, rc: &chunkedBody{br: lc.br, r: httputil.NewChunkedReader(lc.br)}, g: newGuard(context.Background()), reuse: true}
	d, res := c.decode.Get().(*decoder), &Result{}
	defer c.decode.Put(d)
	res.Reset()
	if err := c.readStream(d, body, res); err != nil || len(res.TokenTimes) != 100 {
		b.Error(err, len(res.TokenTimes))
	}
	for range ch { // what is left after the body
	}
}

// readManyFloor reads one stream from ch as streambench's floor does.
func readManyFloor(ch chanReader) {
	floorLines(bufio.NewReaderSize(ch, 4<<10), make([]time.Duration, 0, 128))
	for range ch {
	}
}

// floorLines is streambench's floor client's reading of a stream
// (internal/streambench/floor.go): lines split in the buffer, each data
// line stamped, the gaps appended to gaps; [DONE] ends it.
func floorLines(br *bufio.Reader, gaps []time.Duration) []time.Duration {
	var last time.Time
	for {
		line, err := br.ReadSlice('\n')
		if err != nil || !bytes.HasPrefix(line, []byte("data: ")) {
			if err != nil {
				return gaps
			}
			continue
		}
		now := time.Now()
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			return gaps
		}
		if !last.IsZero() {
			gaps = append(gaps, now.Sub(last))
		}
		last = now
	}
}

// nopConn is a connection whose Close does nothing (benchmarks).
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }
