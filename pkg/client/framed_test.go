package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httputil"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// errAfter reads r, then fails with err (io.EOF when nil).
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.err != nil {
		err = e.err
	}
	return n, err
}

// readLines reads l to its end: its lines and the error it ended with
// (nil for io.EOF).
func readLines(l *lineReader) ([]string, error) {
	var lines []string
	for {
		line, _, err := l.next()
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, string(line))
	}
}

// framedConn is a lean connection over raw whose reads come in
// pseudo-random sizes (split); with buffered, its buffered reader holds
// some of raw before the body is read, as it can after a head.
func framedConn(raw []byte, split uint64, buffered bool) (*leanConn, *leanBody) {
	nc := &readerConn{r: &splitReader{b: raw, seed: split}, Conn: nopConn{}}
	lc := &leanConn{t: newLeanTransport(1), key: "k", nc: nc, cc: &countingConn{Conn: nc}}
	lc.br = newConnReader(lc.cc)
	if buffered {
		lc.br.Peek(1)
	}
	cb := &chunkedBody{br: lc.br, r: httputil.NewChunkedReader(lc.br)}
	return lc, &leanBody{c: lc, rc: cb, g: newGuard(context.Background()), reuse: true}
}

// FuzzFramed: a chunked body read straight from its connection
// (framed.go) gives the lines that net/http's chunked reader under the
// buffered line reader gives, however the bytes are split into reads, and
// ends cleanly exactly when net/http's does. Its connection goes back to
// the pool only after a clean end with nothing after the body.
func FuzzFramed(f *testing.F) {
	for _, s := range []string{
		"6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n",
		"1a;ext=1\r\ndata: {\"a\":1}\n\ndata: [DO\r\n5\r\nNE]\n\n\r\n0\r\n\r\n",
		"4 \t\r\nab\n\n\r\n0\r\nX-T: 1\r\n\r\n",
		"3\r\nabc\n\r\n",
		"3\nabc\r\n0\r\n\r\n",
		"3\r\nabcXY",
		"g\r\n",
		"0\r\n\r\nextra",
		"0\r\n\r\n",
		"0\r\nbad line\r\n\r\n",
		"0\r\n a: b\r\n\r\n",
		"10000000000000000\r\n",
		"1;" + strings.Repeat("e", 5000) + "\r\nx\r\n0\r\n\r\n",
		strings.Repeat("1;xxxxxxxxxxxxxxxxxxxxxxxxxxx\r\nx\r\n", 800) + "0\r\n\r\n",
		"5\r\nab\ncd\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s), uint64(1), false)
		f.Add([]byte(s), uint64(9), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, split uint64, buffered bool) {
		// net/http's reading, through a reader of 4 KiB as its
		// transport's.
		src := bytes.NewReader(raw)
		br := bufio.NewReaderSize(src, maxChunkLine)
		data, refErr := io.ReadAll(&chunkedBody{br: br, r: httputil.NewChunkedReader(br)})
		var ref lineReader
		ref.reset(&errAfter{r: bytes.NewReader(data), err: refErr}, make([]byte, 16))
		ref.now = time.Now
		want, wantErr := readLines(&ref)
		body := len(raw) - br.Buffered() - src.Len() // the bytes of the body
		after := body < len(raw)

		lc, lb := framedConn(raw, split, buffered)
		var l lineReader
		l.now = time.Now
		l.resetFramed(lb, make([]byte, 16))
		got, gotErr := readLines(&l)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("lines %q, want %q (net/http: %v)", got, want, refErr)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("ended with %v, net/http with %v", gotErr, refErr)
		}
		if wantErr != nil && !errors.Is(gotErr, wantErr) && gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %q, net/http's %q", gotErr, wantErr)
		}
		if !lb.done {
			t.Fatal("the body was not finished")
		}
		// Bytes after the body that the reader had read cost the
		// connection; ones not yet read are the liveness peek's to find
		// when the connection is next taken (leanConn.alive).
		sr := lc.nc.(*readerConn).r.(*splitReader)
		readPast := len(raw)-len(sr.b)-lc.br.Buffered() > body
		pooled := len(lc.t.idle["k"]) == 1
		if pooled && (gotErr != nil || readPast) {
			t.Fatalf("connection pooled after an error (%v) or with bytes read after the body (%v)", gotErr, readPast)
		}
		if !pooled && gotErr == nil && !after {
			t.Fatal("a clean body's connection was not pooled")
		}
	})
}

// TestFramedStreamKeepsItsConnection: streamed responses read straight
// from their connection leave it at the next response: three requests in a
// row take one connection, each with its tokens; a server that sends bytes
// after a body costs that connection (the next request dials anew), not a
// misread response.
func TestFramedStreamKeepsItsConnection(t *testing.T) {
	body := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunked("data: "+tok+"\n\n") + chunked("data: "+tok+"\n\n") + chunked("data: [DONE]\n\n") + "0\r\n\r\n"
	for _, tc := range []struct {
		name  string
		after string
		dials int64
	}{{"clean", "", 1}, {"bytes after the body", "junk", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveReplies(t, body+tc.after)
			c, err := New(Config{BaseURL: "http://" + addr, API: api.VLLM, Model: "m", Stream: true, Epoch: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			for i := range 3 {
				res := &Result{}
				res.Reset()
				c.Do(context.Background(), &Request{MaxTokens: 2, Prompt: []byte(`[1]`)}, res)
				if !res.OK() || len(res.TokenTimes) != 2 {
					t.Fatalf("request %d: %s %s, %d token times", i, res.ErrorClass, res.Error, len(res.TokenTimes))
				}
			}
			if c.lean.dials != tc.dials {
				t.Errorf("%d connections, want %d", c.lean.dials, tc.dials)
			}
		})
	}
}
