package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

// floorEnv, set in a process's environment, makes the streambench binary
// (or its test binary) run as the floor client instead (floorMain).
const floorEnv = "STREAMBENCH_FLOOR"

// floorResult is what the floor client writes: every stream's time to its
// first data line and the gaps between its data lines, in ns, and the
// streams that failed.
type floorResult struct {
	TTFTNS []int64 `json:"ttft_ns"`
	// IDs are the X-Request-Id each TTFT's request was sent with.
	IDs    []string `json:"ids"`
	GapsNS []int64  `json:"gaps_ns"`
	Failed int      `json:"failed"`
	Error  string   `json:"error,omitempty"`
}

// floorBatch is how many connections the floor dials at once (as
// fineserve-gen's --prewarm-connections does).
const floorBatch = 512

// floorMain is the floor client: it dials -streams raw TCP connections to
// -addr before anything is sent, then on each at once writes one
// streamed completion request (prepared bytes) and reads the response
// line by line, timestamping each line that starts with "data: " and
// parsing nothing (the chunked framing's size lines are skipped by the
// same prefix test); a stream ends at "data: [DONE]", its response at the
// framing's last chunk after it, and with -rounds above 1 the connection
// then sends the next request. It writes a floorResult to -out. It is the
// least a Go client can do to see the stream, so what it reports is the
// floor of what any client adds.
func floorMain(args []string) int {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port of the server")
	streams := fs.Int("streams", 100, "streams at once")
	tokens := fs.Int("tokens", 100, "output tokens per stream")
	rounds := fs.Int("rounds", 1, "requests each connection sends, one after another")
	model := fs.String("model", "mock-model", "model name")
	out := fs.String("out", "", "file for the result (JSON)")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	res := runFloor(*addr, *streams, max(*rounds, 1), *tokens, *model)
	b, _ := json.Marshal(res)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	if res.Error != "" {
		fmt.Fprintln(os.Stderr, "floor:", res.Error)
		return 1
	}
	return 0
}

// floorRequest is the request the floor sends: the same completion
// fineserve-gen sends (8 prompt tokens as ids, ignore_eos), without usage,
// with an X-Request-Id of id, so that the truth's record of it is found.
func floorRequest(host, model string, tokens int, id string) []byte {
	body := `{"model":` + strconv.Quote(model) + `,"prompt":[1,1,1,1,1,1,1,1],"max_tokens":` + strconv.Itoa(tokens) +
		`,"min_tokens":` + strconv.Itoa(tokens) + `,"ignore_eos":true,"stream":true}`
	return []byte("POST /v1/completions HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nX-Request-Id: " + id +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// floorID is the X-Request-Id of a stream's round.
func floorID(stream, round int) string { return "f" + strconv.Itoa(stream) + "-" + strconv.Itoa(round) }

func runFloor(addr string, streams, rounds, tokens int, model string) floorResult {
	conns := make([]net.Conn, streams)
	for done := 0; done < streams; done += floorBatch {
		var wg sync.WaitGroup
		errs := make([]error, min(floorBatch, streams-done))
		for i := range errs {
			wg.Go(func() { conns[done+i], errs[i] = net.DialTimeout("tcp", addr, 30*time.Second) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
			return floorResult{Error: "dial: " + err.Error()}
		}
	}
	type stream struct {
		ttft []time.Duration
		gaps []time.Duration
		err  error
	}
	out := make([]stream, streams)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range conns {
		wg.Go(func() {
			defer c.Close()
			s := &out[i]
			s.ttft = make([]time.Duration, 0, rounds)
			s.gaps = make([]time.Duration, 0, rounds*tokens)
			br := bufio.NewReaderSize(c, 4<<10)
			reqs := make([][]byte, rounds)
			for r := range reqs {
				reqs[r] = floorRequest(addr, model, tokens, floorID(i, r))
			}
			<-start
			for _, req := range reqs {
				var ttft time.Duration
				if ttft, s.err = floorStream(c, br, req, &s.gaps); s.err != nil {
					return
				}
				s.ttft = append(s.ttft, ttft)
			}
		})
	}
	close(start)
	wg.Wait()
	var res floorResult
	for i, s := range out {
		if s.err != nil {
			res.Failed += rounds - len(s.ttft)
		}
		for r, t := range s.ttft {
			res.TTFTNS = append(res.TTFTNS, int64(t))
			res.IDs = append(res.IDs, floorID(i, r))
		}
		for _, g := range s.gaps {
			res.GapsNS = append(res.GapsNS, int64(g))
		}
	}
	return res
}

// floorStream sends req on c and reads its response through br, returning
// its TTFT and adding its gaps to *gaps; it returns once the response's
// last chunk (after "data: [DONE]") is read, so that the connection is
// free for the next request.
func floorStream(c net.Conn, br *bufio.Reader, req []byte, gaps *[]time.Duration) (ttft time.Duration, err error) {
	t0 := time.Now()
	if _, err := c.Write(req); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Minute))
	var last time.Time
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
		if ttft > 0 && last.IsZero() {
			// After [DONE]: the last chunk's size line, then its empty
			// trailer.
			if string(line) == "0\r\n" {
				_, err := br.ReadSlice('\n')
				return ttft, err
			}
			continue
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		now := time.Now()
		switch {
		case bytes.HasPrefix(line, []byte("data: [DONE]")):
			if last.IsZero() {
				return 0, errors.New("no token before [DONE]")
			}
			last = time.Time{}
		case last.IsZero():
			ttft = now.Sub(t0)
			last = now
		default:
			*gaps = append(*gaps, now.Sub(last))
			last = now
		}
	}
}
