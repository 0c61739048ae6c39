//go:build linux

package mockserver

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestChunkLogReceipt: over a real connection the chunk log notes when the
// kernel received each request — a request whose last bytes come 60 ms
// after its first was received 60 ms or more before its handler was
// entered, and the truth's TTFT counts from there — and a later request
// on the same connection gets its own receipt, not that of one before it
// (logged or not).
func TestChunkLogReceipt(t *testing.T) {
	var out bytes.Buffer
	log := NewChunkLog(&out, time.Hour)
	s, err := New(Config{Models: []string{"m"}, TTFT: 20 * time.Millisecond, ITL: time.Millisecond, Pace: PaceExact, Chunks: log})
	if err != nil {
		t.Fatal(err)
	}
	port, stop, err := s.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"a","max_tokens":2,"ignore_eos":true,"stream":true}`
	req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	br := bufio.NewReader(c)
	read := func() {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// A first request turns the kernel's stamping on (it does so a
	// moment after it is asked); its record may lack the receipt.
	io.WriteString(c, req)
	read()
	time.Sleep(10 * time.Millisecond)
	const hold = 60 * time.Millisecond
	io.WriteString(c, req[:10]) // the first bytes, then the rest later
	time.Sleep(hold)
	io.WriteString(c, req[10:])
	read()
	// A request the log does not keep, then an idle connection: the
	// next streamed request's receipt is still its own.
	io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
	read()
	time.Sleep(2 * hold)
	io.WriteString(c, req)
	read()
	stop()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadChunkLog(&out)
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records (%v): %s", len(recs), err, out.String())
	}
	r1, r2 := recs[1], recs[2]
	if r1.ReceivedNS == nil || *r1.ReceivedNS > -int64(hold) || r1.TTFTNS() < int64(hold+20*time.Millisecond) {
		t.Errorf("first request: received %v ns, truth TTFT %d ns: want its receipt %v or more before its handler, the TTFT from there", r1.ReceivedNS, r1.TTFTNS(), hold)
	}
	if r2.ReceivedNS == nil || *r2.ReceivedNS <= -int64(hold) {
		t.Errorf("second request: received %v ns: want its own receipt, well within %v of its handler", r2.ReceivedNS, hold)
	}
}
