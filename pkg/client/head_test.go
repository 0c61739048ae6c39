package client

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// headSeeds are responses (each followed by the next one on the
// connection): the first six of shapes fastHead reads, the others of
// shapes it leaves to http.ReadResponse (but the last but one, whose
// trailer fastHead reads past).
var headSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nbusy!",
	"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-multi: a\r\nX-Multi: b\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",                     // short body
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",       // cut in a chunk
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na", // duplicate length
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end",
	"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nBad Name: 1\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 200 OK\nContent-Length: 0\n\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n", // an undeclared trailer
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n",
}

// readBoth parses raw with readHead and with http.ReadResponse and compares
// what a client sees: the status, headers, framing, body (or the error
// reading it) and what is left on the connection for the next response.
func readBoth(t *testing.T, raw string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://x/v1/completions", nil)
	type view struct {
		Status     string
		Code       int
		Header     http.Header
		Length     int64
		Chunked    bool
		Body       string
		BodyErr    bool
		Rest       string
		HeadFailed bool
	}
	read := func(parse func(*bufio.Reader, *http.Request) (*http.Response, error)) view {
		br := bufio.NewReaderSize(strings.NewReader(raw+"NEXT"), 4<<10)
		resp, err := parse(br, req)
		if err != nil {
			return view{HeadFailed: true}
		}
		for resp.StatusCode == http.StatusContinue {
			if resp, err = parse(br, req); err != nil {
				return view{HeadFailed: true}
			}
		}
		body, berr := io.ReadAll(resp.Body)
		resp.Body.Close()
		rest, _ := io.ReadAll(br)
		h := resp.Header.Clone()
		delete(h, "Transfer-Encoding") // net/http moves it to TransferEncoding
		v := view{Status: resp.Status, Code: resp.StatusCode, Header: h, Length: resp.ContentLength,
			Chunked: len(resp.TransferEncoding) > 0, Body: string(body), BodyErr: berr != nil}
		if berr == nil && !resp.Close {
			v.Rest = string(rest) // what the next response would start with on a kept-alive connection
		}
		return v
	}
	got, want := read(readHead), read(http.ReadResponse)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nreadHead          %+v\nhttp.ReadResponse %+v", raw, got, want)
	}
}

// TestReadHeadMatchesNetHTTP: every response of the table reads the same
// through readHead as through http.ReadResponse; the common ones take the
// fast path.
func TestReadHeadMatchesNetHTTP(t *testing.T) {
	for _, raw := range headSeeds {
		readBoth(t, raw)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	for _, raw := range append(headSeeds[:6:6], headSeeds[len(headSeeds)-2]) {
		br := bufio.NewReader(strings.NewReader(raw))
		br.Peek(1)
		if fastHead(br, req) == nil {
			t.Errorf("%q: not read by the fast path", raw)
		}
	}
	for _, raw := range append(headSeeds[6:len(headSeeds)-2:len(headSeeds)-2], headSeeds[len(headSeeds)-1]) {
		br := bufio.NewReader(strings.NewReader(raw))
		br.Peek(1)
		if fastHead(br, req) != nil {
			t.Errorf("%q: read by the fast path, which must leave it to http.ReadResponse", raw)
		}
	}
}

// FuzzReadHead checks readHead against http.ReadResponse, its reference.
func FuzzReadHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if bytes.Contains([]byte(raw), []byte("NEXT")) {
			return
		}
		readBoth(t, raw)
	})
}
