package mockserver

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fastjson"
)

// The pooling endpoints answer a batch of inputs with one vector or score
// each, as vLLM's pooling models do (docs/POOLING.md):
//
//	POST /v1/embeddings              {"input": x | [x, …]}          → data[i].embedding
//	POST /pooling                    {"input": x | [x, …]}          → data[i].data
//	POST /score, /v1/score           {"text_1": q, "text_2": d | [d, …]} → data[i].score
//	POST /rerank, /v1/rerank, /v2/rerank {"query": q, "documents": [d, …]} → results[i].relevance_score
//
// An input x is a text (its words are its tokens) or a list of token ids;
// embeddings and pooling also take a list of token-id lists. A request
// takes Base + PerToken × its prompt tokens once it has a slot
// (Config.MaxNumSeqs): the prompt tokens are the inputs' sum, and for score
// and rerank the pairs' (the query counted with every document, as vLLM
// encodes each pair), which usage.prompt_tokens reports.

// PoolingConfig is the pooling endpoints' latency model and vector length.
type PoolingConfig struct {
	Base, PerToken time.Duration
	// Dims is the length of every vector (0: DefaultPoolingDims).
	Dims int
}

// Defaults of the pooling latency model (mock-server's flags).
const (
	DefaultPoolingBase     = 2 * time.Millisecond
	DefaultPoolingPerToken = 20 * time.Microsecond
	DefaultPoolingDims     = 64
)

// maxPoolingInputs bounds a request's inputs.
const maxPoolingInputs = 1 << 14

type poolingKind uint8

const (
	poolEmbed poolingKind = iota
	poolPooling
	poolScore
	poolRerank
)

// poolingPaths are the endpoints and what each answers.
var poolingPaths = map[string]poolingKind{
	"/v1/embeddings": poolEmbed, "/pooling": poolPooling,
	"/score": poolScore, "/v1/score": poolScore,
	"/rerank": poolRerank, "/v1/rerank": poolRerank, "/v2/rerank": poolRerank,
}

// poolingRequest is what the server understood of a pooling request.
type poolingRequest struct {
	model   string
	inputs  int // vectors or scores to answer
	tokens  int // prompt tokens
	base64  bool
	longest int // the longest input (or pair), for the context check
}

// inputTokens counts one input: a text's words or a list's token ids.
func inputTokens(v *fastjson.Value, what string) (int, error) {
	switch v.Type() {
	case fastjson.TypeString:
		return countWords(v.GetStringBytes()), nil
	case fastjson.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			if it.Type() != fastjson.TypeNumber {
				return 0, fmt.Errorf("%s: a text or a list of token ids is required", what)
			}
		}
		return len(items), nil
	}
	return 0, fmt.Errorf("%s: a text or a list of token ids is required", what)
}

// eitherOption reads the string option key of v that is one of two: false
// for the first (or none), true for the second.
func eitherOption(v *fastjson.Value, key, first, second string) (bool, error) {
	switch f := string(v.GetStringBytes(key)); f {
	case "", first:
		return false, nil
	case second:
		return true, nil
	default:
		return false, fmt.Errorf("%s %q: want %s or %s", key, f, first, second)
	}
}

// parsePooling reads a pooling request of kind.
func (s *Server) parsePooling(body []byte, kind poolingKind) (poolingRequest, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := parseObject(p, body)
	if err != nil {
		return poolingRequest{}, err
	}
	req := poolingRequest{model: s.modelOf(v)}
	if req.base64, err = eitherOption(v, "encoding_format", "float", "base64"); err != nil {
		return req, err
	}
	add := func(n int) {
		req.inputs++
		req.tokens += n
		req.longest = max(req.longest, n)
	}
	switch kind {
	case poolEmbed, poolPooling:
		in := v.Get("input")
		if in == nil {
			return req, errors.New("input: required")
		}
		items, _ := in.Array()
		if in.Type() == fastjson.TypeArray && len(items) > 0 && items[0].Type() != fastjson.TypeNumber {
			for i, it := range items { // a batch: texts or token-id lists
				n, err := inputTokens(it, "input["+strconv.Itoa(i)+"]")
				if err != nil {
					return req, err
				}
				add(n)
			}
		} else {
			n, err := inputTokens(in, "input")
			if err != nil {
				return req, err
			}
			add(n)
		}
	case poolScore, poolRerank:
		qk, dk := "text_1", "text_2"
		if kind == poolRerank {
			qk, dk = "query", "documents"
		} else if v.Get(qk) == nil && v.Get("queries") != nil {
			qk, dk = "queries", "documents"
		}
		qv, dv := v.Get(qk), v.Get(dk)
		if qv == nil || dv == nil {
			return req, fmt.Errorf("%s and %s: required", qk, dk)
		}
		q, err := inputTokens(qv, qk)
		if err != nil || qv.Type() != fastjson.TypeString {
			return req, fmt.Errorf("%s: a text is required", qk)
		}
		docs := []*fastjson.Value{dv}
		if dv.Type() == fastjson.TypeArray {
			docs, _ = dv.Array()
		}
		for i, d := range docs {
			if d.Type() == fastjson.TypeObject && kind == poolRerank { // {"text": …}
				d = d.Get("text")
			}
			if d == nil || d.Type() != fastjson.TypeString {
				return req, fmt.Errorf("%s[%d]: a text is required", dk, i)
			}
			n, _ := inputTokens(d, dk)
			add(q + n) // each pair is encoded whole
		}
	}
	if req.inputs == 0 {
		return req, errors.New("no input to answer")
	}
	if req.inputs > maxPoolingInputs {
		return req, fmt.Errorf("%d inputs: this server answers at most %d a request", req.inputs, maxPoolingInputs)
	}
	return req, nil
}

// handlePooling serves the pooling endpoints.
func (s *Server) handlePooling(w http.ResponseWriter, r *http.Request, kind poolingKind) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, _, ok := s.receiveValues(w, r, bp, max(s.maxValues(), 1<<21))
	if !ok {
		return
	}
	req, err := s.parsePooling(body, kind)
	if !s.accepted(w, req.model, err) {
		return
	}
	if m := s.cfg.MaxModelLen; m > 0 && req.longest > m {
		writeError(w, http.StatusBadRequest, "BadRequestError", "This model's maximum context length is "+strconv.Itoa(m)+
			" tokens. However, you requested "+strconv.Itoa(req.longest)+" tokens in the input for embedding generation. Please reduce the length of the input.")
		return
	}
	id := s.seq.Add(1)
	ctx := r.Context()
	if !s.acquire(ctx) {
		return
	}
	defer s.release()
	pc := s.cfg.Pooling
	if !sleepUntil(ctx, time.Now().Add(pc.Base+time.Duration(req.tokens)*pc.PerToken)) {
		s.aborted.Add(1)
		return
	}
	if !writeJSON(w, s.poolingAnswer(req, kind, id)) {
		return
	}
	s.completed.Add(1)
	s.promptTokens.Add(int64(req.tokens))
	s.pooled.Add(int64(req.inputs))
}

// vectors are the vector every answer carries, as JSON numbers and as
// base64 float32s, made once per length.
type vectors struct{ text, b64 string }

func makeVectors(dims int) vectors {
	var t []byte
	raw := make([]byte, 4*dims)
	for i := range dims {
		x := float32(math.Sin(float64(i+1))) / 8
		if i > 0 {
			t = append(t, ',')
		}
		t = strconv.AppendFloat(t, float64(x), 'f', 6, 32)
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return vectors{text: "[" + string(t) + "]", b64: base64.StdEncoding.EncodeToString(raw)}
}

// poolingAnswer writes the answer of req.
func (s *Server) poolingAnswer(req poolingRequest, kind poolingKind, id int64) []byte {
	dims := s.cfg.Pooling.Dims
	if dims <= 0 {
		dims = DefaultPoolingDims
	}
	s.vecOnce.Do(func() { s.vec = makeVectors(dims) })
	b := make([]byte, 0, 256+req.inputs*(len(s.vec.text)+64))
	score := func(i int) float64 { // a relevance in (0, 1), a function of the request and the document
		h := uint64(id)*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9
		h ^= h >> 29
		return float64(h%9973+1) / 9975
	}
	usage := func(b []byte, rerank bool) []byte {
		b = append(b, `"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(req.tokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(req.tokens), 10)
		if !rerank {
			b = append(b, `,"completion_tokens":0,"prompt_tokens_details":null`...)
		}
		return append(b, '}')
	}
	if kind == poolRerank {
		order := make([]int, req.inputs)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, c int) int { // by score, descending
			switch sa, sc := score(a), score(c); {
			case sa > sc:
				return -1
			case sa < sc:
				return 1
			}
			return 0
		})
		b = append(b, `{"id":"rerank-`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `","model":`...)
		b = strconv.AppendQuote(b, req.model)
		b = append(b, ',')
		b = usage(b, true)
		b = append(b, `,"results":[`...)
		for k, i := range order {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"document":null,"relevance_score":`...)
			b = strconv.AppendFloat(b, score(i), 'f', 6, 64)
			b = append(b, '}')
		}
		return append(b, "]}"...)
	}
	prefix := map[poolingKind]string{poolEmbed: "embd-", poolPooling: "pool-", poolScore: "score-"}[kind]
	b = append(b, `{"id":"`+prefix...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `","object":"list","created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, req.model)
	b = append(b, `,"data":[`...)
	for i := range req.inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		switch kind {
		case poolScore:
			b = append(b, `,"object":"score","score":`...)
			b = strconv.AppendFloat(b, score(i), 'f', 6, 64)
		case poolPooling:
			b = append(b, `,"object":"pooling","data":`...)
			b = append(b, s.vec.text...)
		default:
			b = append(b, `,"object":"embedding","embedding":`...)
			if req.base64 {
				b = append(b, '"')
				b = append(b, s.vec.b64...)
				b = append(b, '"')
			} else {
				b = append(b, s.vec.text...)
			}
		}
		b = append(b, '}')
	}
	b = append(b, "],"...)
	b = usage(b, false)
	return append(b, '}')
}
