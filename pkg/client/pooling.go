package client

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/internal/jsonscan"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// The pooling backends post a batch of inputs and are answered with one
// vector or score per input (vLLM's pooling API; docs/POOLING.md):
//
//	openai-embeddings  POST /v1/embeddings  {"model": M, "input": [x₁, …, x_N]}
//	vllm-pooling       POST /pooling        {"model": M, "input": [x₁, …, x_N]}
//	vllm-rerank        POST /rerank         {"model": M, "query": q, "documents": [d₁, …, d_N]}
//	vllm-score         POST /score          {"model": M, "text_1": q, "text_2": [d₁, …, d_N]}
//
// N is --batch-size. The inputs of embeddings and pooling are token-id
// lists (or texts with --prompt-format text, a dataset); a rerank's or a
// score's query and documents are texts. The arrival's input tokens are
// split over the parts (BatchLens): N inputs, or a query and N documents.
//
// Answers: {"data": [{"embedding": […]}, …]} (embeddings), {"data":
// [{"data": […]}, …]} (pooling), {"data": [{"score": s}, …]} (score),
// {"results": [{"relevance_score": s}, …]} (rerank), each with usage. The
// answer is scanned as it arrives (vectorScan): its entries are counted —
// one per input, or it is a protocol error — and the first vector's length
// taken; no vector is kept, and the body is bounded by maxVectorResponse.

// MaxBatchSize bounds --batch-size.
const MaxBatchSize = api.MaxBatchSize

// maxVectorResponse bounds a pooling answer's body: it is counted as it is
// read, never held (a variable: tests lower it).
var maxVectorResponse int64 = 1 << 30

// batchSize is the inputs of a request (Config.BatchSize, at least 1).
func (c *Client) batchSize() int { return min(max(c.cfg.BatchSize, 1), MaxBatchSize) }

// BatchLens returns the token length of each of parts parts of a batch
// whose inputs are total tokens long together: total split as evenly as
// it goes, the first parts one token longer, and every part at least one
// token (so a batch of more parts than tokens sends one token each).
func BatchLens(total, parts int) []int {
	lens := make([]int, max(parts, 1))
	for i := range lens {
		lens[i] = max(batchLen(total, len(lens), i), 1)
	}
	return lens
}

// batchLen is part i's share of total over parts (BatchLens, before its
// floor of one token).
func batchLen(total, parts, i int) int {
	n := total / parts
	if i < total%parts {
		n++
	}
	return n
}

// appendInput appends part i of parts of req's batch.
func (req *Request) appendInput(b []byte, i, parts int) []byte {
	n := max(batchLen(max(req.InputTokens, 1), parts, i), 1)
	if req.AppendInput != nil {
		return req.AppendInput(b, i, n)
	}
	return req.appendPrompt(b) // a request built without a batch (tests, the warm-up of a caller that has none)
}

// appendInputs appends parts inputs from part from as a JSON list.
func (req *Request) appendInputs(b []byte, from, parts int) []byte {
	b = append(b, '[')
	for i := from; i < parts; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = req.appendInput(b, i, parts)
	}
	return append(b, ']')
}

// appendEmbeddingsBody appends an embeddings (or pooling) request: N
// inputs.
func appendEmbeddingsBody(c *Client, b []byte, req *Request) []byte {
	o := c.openModelBody(b, req)
	if o.member("input") {
		o.b = req.appendInputs(o.b, 0, c.batchSize())
	}
	return c.closeBody(&o)
}

// appendRerankBody appends a rerank request: a query (part 0) and N
// documents.
func appendRerankBody(c *Client, b []byte, req *Request) []byte {
	return c.appendQueryBody(b, req, "query", "documents")
}

// appendScoreBody appends a score request: text_1 the query, text_2 the
// N documents.
func appendScoreBody(c *Client, b []byte, req *Request) []byte {
	return c.appendQueryBody(b, req, "text_1", "text_2")
}

func (c *Client) appendQueryBody(b []byte, req *Request, query, docs string) []byte {
	parts := c.batchSize() + 1
	o := c.openModelBody(b, req)
	if o.member(query) {
		o.b = req.appendInput(o.b, 0, parts)
	}
	if o.member(docs) {
		o.b = req.appendInputs(o.b, 1, parts)
	}
	return c.closeBody(&o)
}

// readVectors reads an embeddings or pooling answer: one vector an input
// (an entry's embedding, or its pooled data).
func readVectors(c *Client, d *decoder, _ *http.Response, rd io.Reader, res *Result) error {
	return c.readBatch(d, rd, res, vectorScan{lists: [2]string{"data", "data"}, vec: [2]string{"embedding", "data"}})
}

// readScores reads a score or rerank answer: one score a document.
func readScores(c *Client, d *decoder, _ *http.Response, rd io.Reader, res *Result) error {
	return c.readBatch(d, rd, res, vectorScan{lists: [2]string{"data", "results"}})
}

// readBatch scans a pooling answer with sc (its list and vector keys set).
func (c *Client) readBatch(d *decoder, rd io.Reader, res *Result, sc vectorScan) error {
	if d.buf == nil || len(d.buf) < 32<<10 {
		d.buf = make([]byte, 32<<10)
	}
	err := sc.read(rd, d.buf)
	res.End = c.since()
	if err != nil {
		return err
	}
	if len(sc.errObj) > 0 {
		v, err := d.parse(sc.errObj)
		if err != nil {
			return protocolError{"invalid error object in the answer"}
		}
		return chunkError(v)
	}
	if !sc.sawList {
		return protocolError{fmt.Sprintf("answer has no %s list", sc.lists[1])}
	}
	switch {
	case sc.nonFinite:
		return protocolError{"the answer holds a value that is not a finite number (NaN or Infinity)"}
	case sc.empty > 0:
		return protocolError{fmt.Sprintf("the answer holds %d empty vector(s)", sc.empty)}
	}
	res.Returned, res.Dims = sc.entries, sc.dims
	if len(sc.usage) > 0 {
		if u, err := d.parse(sc.usage); err == nil && u.Type() == fastjson.TypeObject {
			if n := u.Get("prompt_tokens"); n != nil && n.Type() == fastjson.TypeNumber {
				res.PromptTokens = n.GetInt()
			}
		}
	}
	// One entry an input; a rerank asked for its top_n only
	// (--extra-request-body) may hold fewer, never more.
	if res.Inputs > 0 && (sc.entries > res.Inputs || sc.entries < res.Inputs && !c.omit["top_n"]) {
		what := "vectors"
		if sc.vec[0] == "" {
			what = "scores"
		}
		return protocolError{fmt.Sprintf("the answer holds %d %s for the %d inputs sent", sc.entries, what, res.Inputs)}
	}
	return nil
}

// vectorScan counts a pooling answer's entries as it is read, without
// keeping it: it follows the JSON's nesting (strings, objects, arrays) and
// keeps only the top-level usage and error objects (small: at most
// maxScanObject bytes) and the key names it needs. It checks the nesting,
// not every token's grammar.
type vectorScan struct {
	lists [2]string // the top-level keys of the entries' list
	vec   [2]string // an entry's key of its vector ("" for scores)

	stack   []byte   // '{' or '[' per open level
	keys    []string // the key of each open object's current member
	str     []byte   // the string being read (its first bytes: only keys matter)
	strLen  int
	strs    jsonscan.Strings // inside a string
	isValue bool             // the string being read is a member's value
	colon   bool             // a ':' was read and its value has not started
	pending string           // the last string read: a key if ':' follows
	started bool             // the top-level object opened
	ended   bool             // and closed

	sawList  bool
	entries  int
	dims     int
	inVec    bool // in the first entry's vector array
	vecDepth int  // its level
	vecVals  int

	// nonFinite: a NaN or Infinity literal (Python's json writes them; JSON
	// has none) stood outside a string; empty counts the entries' vectors
	// that held no element (an empty array or string). inEntryVec is an
	// entry's vector array being read at level entryVecDepth, entryVecEmpty
	// whether nothing has come in it yet.
	nonFinite     bool
	empty         int
	inEntryVec    bool
	entryVecDepth int
	entryVecEmpty bool

	capture *[]byte // usage or error being kept
	capFrom int     // its level
	usage   []byte
	errObj  []byte
	bytes   int64
}

// maxScanObject bounds the usage and error objects kept.
const maxScanObject = 64 << 10

// maxScanDepth bounds an answer's nesting.
const maxScanDepth = 64

func (s *vectorScan) read(r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.bytes += int64(n)
			if s.bytes > maxVectorResponse {
				return protocolError{fmt.Sprintf("answer larger than %d MiB (pooling answers are counted as they arrive, up to this bound)", maxVectorResponse>>20)}
			}
			if perr := s.scan(buf[:n]); perr != nil {
				return perr
			}
		}
		if errors.Is(err, io.EOF) {
			if !s.ended {
				return protocolError{"answer is not a complete JSON object"}
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// name returns the key b as one of the names the scanner looks for, or
// "" for any other (no string is made for a key).
func (s *vectorScan) name(b []byte) string {
	for _, n := range [...]string{s.lists[0], s.lists[1], s.vec[0], s.vec[1], "usage", "error"} {
		if n != "" && string(b) == n {
			return n
		}
	}
	return ""
}

// vecKey reports whether the member being read at level depth (its
// parent an entry of the list) is the first entry's vector.
func (s *vectorScan) vecKey(depth int) bool {
	return s.entries == 1 && s.entryVecKey(depth)
}

// entryVecKey reports whether the member being read at level depth is an
// entry's vector.
func (s *vectorScan) entryVecKey(depth int) bool {
	return depth == 3 && s.vec[0] != "" && s.stack[2] == '{' &&
		(s.keys[2] == s.vec[0] || s.keys[2] == s.vec[1]) && s.inList()
}

// inList reports whether level 1 is the entries' list.
func (s *vectorScan) inList() bool {
	return len(s.stack) >= 2 && s.stack[1] == '[' && (s.keys[0] == s.lists[0] || s.keys[0] == s.lists[1])
}

// plainByte marks the bytes of literals and commas: neither structure
// (strings, objects, arrays, keys) nor space. Outside the first vector a
// run of them only ends a pending key's colon, so it is skipped at once.
// 'N' and 'I' are not: outside a string they start NaN or Infinity, which
// the scan notes.
var plainByte = func() (t [256]bool) {
	for i := range t {
		t[i] = true
	}
	for _, c := range []byte("\"{}[]: \t\r\nNI") {
		t[c] = false
	}
	return t
}()

func (s *vectorScan) scan(p []byte) error {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if plainByte[c] && !s.strs.In() && s.capture == nil && !s.inVec && s.started && !s.ended {
			for i+1 < len(p) && plainByte[p[i+1]] {
				i++
			}
			s.colon, s.entryVecEmpty = false, false
			continue
		}
		if s.capture != nil {
			if len(*s.capture) >= maxScanObject {
				return protocolError{"usage or error object too large"}
			}
			*s.capture = append(*s.capture, c)
		}
		if s.strs.In() {
			if _, closed := s.strs.Step(c); closed {
				s.pending = s.name(s.str)
				if s.isValue && s.vecKey(len(s.stack)) && s.dims == 0 {
					s.dims = s.strLen * 3 / 4 / 4 // base64 of float32s
				}
				if s.isValue && s.strLen == 0 && s.entryVecKey(len(s.stack)) {
					s.empty++ // an empty base64 vector
				}
				continue
			}
			s.strLen++
			if len(s.str) < 32 {
				s.str = append(s.str, c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		if s.ended {
			return protocolError{fmt.Sprintf("data after the answer's JSON object: %q", truncate(string(p[i:]), 40))}
		}
		if !s.started {
			if c != '{' {
				return protocolError{fmt.Sprintf("answer is not a JSON object: %q", truncate(string(p[i:]), 200))}
			}
			s.started = true
		}
		depth := len(s.stack)
		if s.inVec && depth == s.vecDepth && s.vecVals == 0 && c != ']' {
			s.vecVals = 1 // the vector's first element
		}
		if c != ']' {
			s.entryVecEmpty = false
		}
		if c == 'N' || c == 'I' {
			s.nonFinite = true // NaN, Infinity or -Infinity (or not JSON at all)
		}
		colon := s.colon
		s.colon = false
		switch c {
		case '"':
			s.strs.Step(c)
			s.str, s.strLen, s.isValue = s.str[:0], 0, colon
		case ':':
			if depth > 0 && s.stack[depth-1] == '{' {
				s.keys[depth-1] = s.pending
				s.colon = true
			}
		case ',':
			if s.inVec && depth == s.vecDepth {
				s.vecVals++
			}
		case '{', '[':
			if depth >= maxScanDepth {
				return protocolError{"answer nested too deep"}
			}
			if depth == 1 && c == '{' && s.capture == nil {
				switch s.keys[0] {
				case "usage":
					s.usage = append(s.usage[:0], '{')
					s.capture, s.capFrom = &s.usage, 1
				case "error":
					s.errObj = append(s.errObj[:0], '{')
					s.capture, s.capFrom = &s.errObj, 1
				}
			}
			if depth == 1 && c == '[' && (s.keys[0] == s.lists[0] || s.keys[0] == s.lists[1]) {
				s.sawList = true
			}
			if depth == 2 && c == '{' && s.inList() {
				s.entries++
			}
			if c == '[' && s.vecKey(depth) {
				s.inVec, s.vecDepth, s.vecVals = true, depth+1, 0
			}
			if c == '[' && s.entryVecKey(depth) {
				s.inEntryVec, s.entryVecDepth, s.entryVecEmpty = true, depth+1, true
			}
			s.stack = append(s.stack, c)
			s.keys = append(s.keys, "")
		case '}', ']':
			if depth == 0 || (c == '}') != (s.stack[depth-1] == '{') {
				return protocolError{"answer's JSON brackets do not match"}
			}
			if s.inVec && depth == s.vecDepth {
				s.inVec, s.dims = false, s.vecVals
			}
			if s.inEntryVec && depth == s.entryVecDepth {
				if s.entryVecEmpty {
					s.empty++
				}
				s.inEntryVec = false
			}
			s.stack, s.keys = s.stack[:depth-1], s.keys[:depth-1]
			if s.capture != nil && depth-1 == s.capFrom {
				s.capture = nil
			}
			if depth == 1 {
				s.ended = true
			}
		}
	}
	return nil
}
