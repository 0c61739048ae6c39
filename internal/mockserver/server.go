// Package mockserver is a vLLM-like OpenAI-compatible server with a latency
// model (queueing, prefill, time to first token, inter-token latency): the
// default target of the demo, the tests and the benchmarks.
package mockserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/internal/reqid"
)

// Config is the server's latency model and identity.
type Config struct {
	// Models are the served model names; the first is the default. At least
	// one is required.
	Models []string
	// TTFT is the time from a request starting (getting a slot) to its first
	// token, plus PrefillPerToken for every prompt token.
	TTFT            time.Duration
	PrefillPerToken time.Duration
	// TTFTJitter, when > 0, adds to every generation's TTFT a draw uniform
	// in [−TTFTJitter, +TTFTJitter] (the TTFT at least 0), a pure function
	// of Seed and the request's number: a server whose latency varies
	// from request to request, and so from run to run.
	TTFTJitter time.Duration
	// ITL is the time between successive tokens.
	ITL time.Duration
	// ITLJitter spreads every inter-token gap (jitter.go): ITL × a factor
	// drawn uniformly from [1 − ITLJitter, 1 + ITLJitter] for each token of
	// each request, a pure function of Seed, the request's number and the
	// token's (the mean is kept). 0: none; at most 1.
	ITLJitter float64
	// MaxNumSeqs bounds the requests generating at once; further requests
	// wait in FIFO order, as in an overloaded vLLM. 0 means unbounded.
	MaxNumSeqs int
	// MaxModelLen rejects requests whose prompt plus max tokens exceed it
	// (0: no limit), with vLLM's 400 error.
	MaxModelLen int
	// EOSMeanTokens, when > 0, makes requests that do not force their
	// length (no ignore_eos, min_tokens < max_tokens) stop at an
	// end-of-sequence token after a geometric number of tokens of this mean.
	EOSMeanTokens int
	// Tokenizer, when set, counts the text of prompts (a Hugging Face
	// tokenizer, pkg/tokenizer); without it a text's tokens are its
	// whitespace-separated words.
	Tokenizer interface{ Count(string) int }
	// TokensPerImage is what one image part of a chat message counts for in
	// prompt tokens; 0: Qwen2-VL's count for the image's size (media.go).
	TokensPerImage int
	// AudioTokensPerSecond is what a second of an audio part counts for
	// (0: Qwen2-Audio's 25), plus 2 a clip (media.go).
	AudioTokensPerSecond float64
	// OnRequest, when set, receives the path and body of every request
	// (tests inspect what reached the server). The body must not be kept.
	OnRequest func(path string, body []byte)
	// Faults injects failures into a share of generation requests (see
	// faults.go).
	Faults FaultConfig
	// PrefixCache counts prefix-cache hits (see prefixcache.go).
	PrefixCache PrefixCacheConfig
	// KVCacheTokens is the KV-cache capacity reported on /metrics (see
	// metrics.go; 0: DefaultKVCacheTokens).
	KVCacheTokens int
	// Images is the latency model of /v1/images/generations (images.go).
	Images ImageConfig
	// Arrivals, when set, records the instant every generation request
	// (completions, chat completions, images) reaches its handler
	// (arrivallog.go).
	Arrivals *ArrivalLog
	// Pace is how stream chunks are timed (chunklog.go): PaceDefault from
	// the slot, PaceExact absolute from the arrival.
	Pace Pace
	// Chunks, when set, logs every streamed completion's arrival and
	// token writes (chunklog.go).
	Chunks *ChunkLog
	// Seed makes the per-request draws (reasoning length, tool calls,
	// invalid answers) a pure function of itself and the request's number.
	Seed uint64
	// Reasoning makes chat completions and responses answer as a
	// reasoning model (reasoning.go).
	Reasoning ReasoningConfig
	// Tools is how requests with tools are answered (tools.go).
	Tools ToolConfig
	// Structured is how requests with a JSON response format are
	// answered (tools.go).
	Structured StructuredConfig
	// MaxBodyBytes is the largest request body read (0:
	// DefaultMaxBodyBytes); a larger one gets a 400. A body is also
	// refused, unparsed, when it holds more JSON values than a prompt
	// within MaxModelLen needs, so memory stays bounded.
	MaxBodyBytes int64
	// Pooling is the latency model and the answers of the pooling
	// endpoints: embeddings, pooling, score, rerank (pooling.go).
	Pooling PoolingConfig
	// ContentParts sends a chat answer's content as an array of content
	// parts ([{"type":"text","text":…}]), in each streamed delta and in a
	// whole message, as servers that answer in several modalities do;
	// false: a string, as vLLM.
	ContentParts bool
	// ResponseStore is how many responses of /v1/responses are kept for
	// previous_response_id (least recently used evicted; responses.go);
	// 0 keeps none, as vLLM without VLLM_ENABLE_RESPONSES_API_STORE.
	ResponseStore int
	// GPUs is the number of GPUs whose DCGM-like telemetry the mock serves
	// at GPUMetricsPath (0: none; gpu.go).
	GPUs int
	// SpecDecode emulates speculative decoding's counters (specdecode.go).
	SpecDecode SpecDecodeConfig
}

// validate returns every problem of the model options at once.
func (c Config) validate() error {
	var sd error
	if c.SpecDecode.K < 0 || c.SpecDecode.K > MaxSpecTokens {
		sd = fmt.Errorf("spec decode tokens %d: want 0 to %d", c.SpecDecode.K, MaxSpecTokens)
	}
	if c.GPUs < 0 || c.GPUs > MaxGPUs {
		sd = errors.Join(sd, fmt.Errorf("gpus %d: want 0 to %d", c.GPUs, MaxGPUs))
	}
	return errors.Join(sd, validJitter("ITL jitter", c.ITLJitter), validShare("spec decode acceptance", c.SpecDecode.Accept), c.Reasoning.Validate(), validShare("tool call share", c.Tools.CallShare),
		validShare("tool call invalid share", c.Tools.InvalidShare), validShare("schema invalid share", c.Structured.InvalidShare))
}

// maxOutputTokens bounds a request's max_tokens when the server has no
// context length (MaxModelLen 0), and the reasoning tokens.
const maxOutputTokens = 1 << 24

// Server implements the endpoints. Create it with New.
type Server struct {
	cfg     Config
	models  map[string]bool
	slots   chan struct{}
	parsers fastjson.ParserPool
	seq     atomic.Int64
	faults  *faultPlan
	prefix  *prefixCache   // nil: no prefix cache
	store   *responseStore // nil: responses are not stored
	kv      kvCache        // /metrics' KV-cache model (metrics.go)
	spec    specCounters   // speculative decoding (specdecode.go)

	running, waiting        atomic.Int64
	requests, completed     atomic.Int64
	aborted                 atomic.Int64 // requests whose client went away before their end
	promptTokens, genTokens atomic.Int64
	images                  atomic.Int64 // generated (images.go)
	pooled                  atomic.Int64 // inputs answered (pooling.go)
	vecOnce                 sync.Once
	vec                     vectors      // the pooling answers' vector
	audioMillis             atomic.Int64 // audio transcribed (transcription.go)
	model                   modelCounters
	busyMu                  sync.Mutex
	busySince               time.Time
	busyTotal               time.Duration
	startedAt               time.Time
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("mock server: at least one model name is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("mock server: %w", err)
	}
	s := &Server{cfg: cfg, models: map[string]bool{}, startedAt: time.Now()}
	fp, err := newFaultPlan(cfg.Faults)
	if err != nil {
		return nil, err
	}
	s.faults = fp
	s.prefix = newPrefixCache(cfg.PrefixCache)
	s.store = newResponseStore(cfg.ResponseStore)
	s.kv.init(cfg.KVCacheTokens)
	for _, m := range cfg.Models {
		s.models[m] = true
	}
	if cfg.MaxNumSeqs > 0 {
		s.slots = make(chan struct{}, cfg.MaxNumSeqs)
	}
	return s, nil
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, true) })
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /generate", s.handleSGLang)
	mux.HandleFunc("POST /v2/models/{model}/generate", s.handleKServe(false))
	mux.HandleFunc("POST /v2/models/{model}/generate_stream", s.handleKServe(true))
	mux.HandleFunc("POST /v1/images/generations", s.handleImages)
	for path, kind := range poolingPaths {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { s.handlePooling(w, r, kind) })
	}
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleTranscription)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	mux.Handle("GET /metrics", s.metricsHandler())
	if s.cfg.GPUs > 0 {
		mux.Handle("GET "+GPUMetricsPath, s.gpuHandler())
	}
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"version":"fineserve-gen-mock"}`)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As vLLM with --enable-request-id-headers: the request's
		// X-Request-Id comes back on its response.
		if id := requestID(r); id != "" {
			w.Header().Set("X-Request-Id", id)
		}
		mux.ServeHTTP(w, r)
	})
}

// maxRequestID bounds the X-Request-Id the server takes.
const maxRequestID = 128

// requestID returns r's X-Request-Id when it is a plain id — letters,
// digits and "-_.:", at most maxRequestID of them — else "" (the
// server's own number names the response then).
func requestID(r *http.Request) string {
	v := r.Header.Get("X-Request-Id")
	if len(v) > maxRequestID || !reqid.Plain(v) {
		return ""
	}
	return v
}

// ServeLoopback serves on a free port of 127.0.0.1 until stop is called;
// stop shuts the server down and waits until it has. It returns the port.
func (s *Server) ServeLoopback() (port int, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, ln); close(done) }()
	return ln.Addr().(*net.TCPAddr).Port, func() { cancel(); <-done }, nil
}

// ServeNew makes a server of cfg (New) and serves it on 127.0.0.1
// (ServeLoopback): the port, and stop to shut it down.
func ServeNew(cfg Config) (srv *Server, port int, stop func(), err error) {
	if srv, err = New(cfg); err != nil {
		return nil, 0, nil, err
	}
	port, stop, err = srv.ServeLoopback()
	return srv, port, stop, err
}

// shutdownGrace is how long a stopping server waits for its handlers to
// return before it closes their connections.
const shutdownGrace = time.Second

// Serve serves on ln until ctx is done, then stops: the requests in
// flight are ended (their contexts canceled) and their connections closed
// after shutdownGrace at most.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Requests' contexts end when the server stops: generations in flight
	// end at once, as a stopped vLLM's do.
	base, stopRequests := context.WithCancel(context.Background())
	defer stopRequests()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	if s.cfg.Chunks != nil {
		// The chunk log's truth starts when the kernel received a request
		// (rxstamp_linux.go).
		ln, srv.ConnContext, srv.Handler = stampListener(ln), stampContext, stampHandler(srv.Handler)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		s.faults.release() // stalled and endless responses end
		stopRequests()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close() // a handler blocked writing to a client that does not read
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	Requests, Completed, Running, Waiting int64
	PromptTokens, GenerationTokens        int64
	// Aborted counts the requests whose client went away (a cancelled
	// request) while they waited for a slot or generated: a generation
	// stops and frees its slot at once.
	Aborted int64
	// PooledInputs counts the inputs the pooling endpoints answered (one
	// vector or score each); AudioSeconds the audio transcribed.
	PooledInputs int64
	AudioSeconds float64
	// Busy is the total time at least one request was generating.
	Busy time.Duration
	Up   time.Duration
	// Model is what the completed chat and Responses requests were
	// answered with: the truth a client's figures are checked against.
	Model ModelStats
}

// ModelStats counts what completed chat and Responses requests were
// answered with.
type ModelStats struct {
	// ReasoningTokens is the reasoning tokens generated (GenerationTokens
	// holds them too).
	ReasoningTokens int64
	// ToolCalls answered with a tool call, of which InvalidToolCalls with
	// arguments that are not JSON.
	ToolCalls, InvalidToolCalls int64
	// Structured answered a response format, of which InvalidStructured
	// with an answer the schema rejects or that does not parse.
	Structured, InvalidStructured int64
}

// Stats returns the server's counters now.
func (s *Server) Stats() Stats {
	s.busyMu.Lock()
	busy := s.busyTotal
	if s.running.Load() > 0 {
		busy += time.Since(s.busySince)
	}
	s.busyMu.Unlock()
	return Stats{
		Requests: s.requests.Load(), Completed: s.completed.Load(),
		Running: s.running.Load(), Waiting: s.waiting.Load(),
		PromptTokens: s.promptTokens.Load(), GenerationTokens: s.genTokens.Load(),
		Aborted:      s.aborted.Load(),
		PooledInputs: s.pooled.Load(), AudioSeconds: float64(s.audioMillis.Load()) / 1000,
		Busy: busy, Up: time.Since(s.startedAt),
		Model: ModelStats{ReasoningTokens: s.model.reasoning.Load(), ToolCalls: s.model.calls.Load(), InvalidToolCalls: s.model.badCalls.Load(),
			Structured: s.model.structured.Load(), InvalidStructured: s.model.badStructured.Load()},
	}
}

// modelCounters are ModelStats' counters.
type modelCounters struct {
	reasoning, calls, badCalls, structured, badStructured atomic.Int64
}

// count adds a completed request's answer to the counters.
func (c *modelCounters) count(g *generation) {
	c.reasoning.Add(int64(g.reasoning))
	switch {
	case g.tool != nil:
		c.calls.Add(1)
		if g.tool.invalid {
			c.badCalls.Add(1)
		}
	case g.answer != nil:
		c.structured.Add(1)
		if g.invalidAnswer {
			c.badStructured.Add(1)
		}
	}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	b := []byte(`{"object":"list","data":[`)
	for i, m := range s.cfg.Models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendQuote(b, m)
		b = append(b, `,"object":"model","created":0,"owned_by":"fineserve-gen","root":`...)
		b = strconv.AppendQuote(b, m)
		b = append(b, `,"max_model_len":`...)
		b = strconv.AppendInt(b, int64(s.cfg.MaxModelLen), 10)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	writeJSON(w, b)
}

// writeJSON answers with the JSON body b; false when the client went away.
func writeJSON(w http.ResponseWriter, b []byte) bool {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(b)
	return err == nil
}

// begin starts an image or a transcription request once it is accepted
// (parsed without err, its model served): it numbers it and takes a slot
// for it (waiting while every one is busy). The handler, when ok,
// gives the slot back (s.release); ok is false when the request was
// answered with an error or went away while it waited.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, model string, err error) (id int64, ok bool) {
	if !s.accepted(w, model, err) {
		return 0, false
	}
	id = s.seq.Add(1)
	return id, s.acquire(r.Context())
}

// writeError writes a vLLM-style error object.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b := []byte(`{"object":"error","message":`)
	b = strconv.AppendQuote(b, msg)
	b = append(b, `,"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, '}')
	w.Write(b)
}

// request is what the server understood of a generation request.
type request struct {
	model        string
	promptTokens int
	images       int
	maxTokens    int
	minTokens    int
	ignoreEOS    bool
	stream       bool
	usage        bool
	prefix       *blockHasher // prefix cache block hashes (prefixcache.go)
	// hideReasoning: include_reasoning false (the reasoning is generated,
	// and takes its time, but is not sent).
	hideReasoning bool
	tools         []toolSpec
	toolChoice    int
	named         int // tools[named] is the named tool_choice
	format        *outputFormat
}

// parseObject parses body, which must be a JSON object, with p.
func parseObject(p *fastjson.Parser, body []byte) (*fastjson.Value, error) {
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON body: %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, errors.New("the body must be a JSON object")
	}
	return v, nil
}

// modelOf is the model a request body names, or the first served when it
// names none.
func (s *Server) modelOf(v *fastjson.Value) string {
	if m := v.GetStringBytes("model"); len(m) > 0 {
		return string(m)
	}
	return s.cfg.Models[0]
}

// parse reads a completion or chat request body.
func (s *Server) parse(body []byte, chat bool) (request, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return request{}, fmt.Errorf("invalid JSON body: %v", err)
	}
	req := request{model: s.modelOf(v), maxTokens: 16}
	if chat {
		msgs := v.GetArray("messages")
		if len(msgs) == 0 {
			return req, errors.New("messages: a non-empty list is required")
		}
		for _, m := range msgs {
			if err := s.countContent(m.Get("content"), &req); err != nil {
				return req, err
			}
		}
		name := "max_completion_tokens"
		if v.Get(name) == nil {
			name = "max_tokens"
		}
		if err := intField(v, name, &req.maxTokens); err != nil {
			return req, err
		}
		if ir := v.Get("include_reasoning"); ir != nil && ir.Type() == fastjson.TypeFalse {
			req.hideReasoning = true
		}
		if err := s.parseTools(v, &req, false); err != nil {
			return req, err
		}
		if err := s.parseFormat(v.Get("response_format"), &req, false); err != nil {
			return req, err
		}
	} else {
		pr := v.Get("prompt")
		if pr == nil {
			return req, errors.New("prompt: required")
		}
		switch pr.Type() {
		case fastjson.TypeString:
			req.promptTokens = s.countText(pr.GetStringBytes())
		case fastjson.TypeArray:
			items, _ := pr.Array()
			for _, it := range items {
				if it.Type() != fastjson.TypeNumber {
					return req, errors.New("prompt: a string or a list of token ids is required (batched prompts are not supported)")
				}
			}
			req.promptTokens = len(items)
		default:
			return req, errors.New("prompt: a string or a list of token ids is required")
		}
		if err := intField(v, "max_tokens", &req.maxTokens); err != nil {
			return req, err
		}
	}
	if err := intField(v, "min_tokens", &req.minTokens); err != nil {
		return req, err
	}
	req.ignoreEOS = v.GetBool("ignore_eos")
	req.stream = v.GetBool("stream")
	req.usage = !req.stream || v.GetBool("stream_options", "include_usage")
	if req.maxTokens < 1 {
		return req, fmt.Errorf("max_tokens must be at least 1, got %d", req.maxTokens)
	}
	if req.minTokens < 0 || req.minTokens > req.maxTokens {
		return req, fmt.Errorf("min_tokens must be between 0 and max_tokens (%d), got %d", req.maxTokens, req.minTokens)
	}
	if s.prefix != nil {
		req.prefix = s.prefixBlocks(v, chat, req.model)
	}
	return req, nil
}

// intField reads v's integer field name into *n when it is a number (left
// as it is otherwise), and fails for a number that is not an integer of
// 64 bits rather than reading it as 0.
func intField(v *fastjson.Value, name string, n *int) error {
	f := v.Get(name)
	if f == nil || f.Type() != fastjson.TypeNumber {
		return nil
	}
	i, err := f.Int64()
	if err != nil {
		return fmt.Errorf("%s: %s is not an integer of 64 bits", name, f.String())
	}
	*n = int(i)
	return nil
}

// countContent adds a chat message's content to the prompt count.
func (s *Server) countContent(c *fastjson.Value, req *request) error {
	if c == nil {
		return nil
	}
	switch c.Type() {
	case fastjson.TypeString:
		req.promptTokens += s.countText(c.GetStringBytes())
	case fastjson.TypeArray:
		parts, _ := c.Array()
		for _, part := range parts {
			switch string(part.GetStringBytes("type")) {
			case "text":
				req.promptTokens += s.countText(part.GetStringBytes("text"))
			case "image_url", "input_image":
				req.images++
				req.promptTokens += s.imageTokens(imageURL(part))
			case "input_audio", "audio_url":
				n, err := s.audioTokens(part)
				if err != nil {
					return err
				}
				req.promptTokens += n
			default:
				return fmt.Errorf("content part type %q is not supported", part.GetStringBytes("type"))
			}
		}
	case fastjson.TypeNull:
	default:
		return errors.New("message content must be a string or a list of parts")
	}
	return nil
}

// countText counts a prompt text's tokens: with the configured tokenizer,
// else its words.
func (s *Server) countText(b []byte) int {
	if s.cfg.Tokenizer != nil {
		return s.cfg.Tokenizer.Count(string(b))
	}
	return countWords(b)
}

// countWords counts a prompt's tokens: its whitespace-separated words.
func countWords(b []byte) int {
	n, in := 0, false
	for _, c := range b {
		sp := isSpace(c)
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// isSpace reports whether c separates words (tokens) of a prompt.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, err := readBody(r, bp, s.maxBody())
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if limit := s.maxValues(); countValues(body, limit) > limit {
		writeError(w, http.StatusBadRequest, "BadRequestError", "request body holds more than "+strconv.Itoa(limit)+" JSON values")
		return
	}
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(r.URL.Path, body)
	}
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body")
		return
	}
	req := request{}
	if msgs := v.GetArray("messages"); msgs != nil {
		for _, m := range msgs {
			if err := s.countContent(m.Get("content"), &req); err != nil {
				writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
				return
			}
		}
	} else if pr := v.Get("prompt"); pr != nil && pr.Type() == fastjson.TypeString {
		req.promptTokens = s.countText(pr.GetStringBytes())
	} else if pr != nil && pr.Type() == fastjson.TypeArray {
		items, _ := pr.Array()
		req.promptTokens = len(items)
	} else {
		writeError(w, http.StatusBadRequest, "BadRequestError", "prompt or messages: required")
		return
	}
	b := []byte(`{"count":`)
	b = strconv.AppendInt(b, int64(req.promptTokens), 10)
	b = append(b, `,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(s.cfg.MaxModelLen), 10)
	b = append(b, `,"tokens":[`...)
	for i := range req.promptTokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(1000+i%29000), 10)
	}
	b = append(b, "]}"...)
	writeJSON(w, b)
}

// acquire waits for a generation slot; it reports false if the client went
// away while waiting.
func (s *Server) acquire(ctx context.Context) bool {
	if s.slots == nil {
		s.startRunning()
		return true
	}
	select {
	case s.slots <- struct{}{}:
		s.startRunning()
		return true
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.slots <- struct{}{}:
		s.startRunning()
		return true
	case <-ctx.Done():
		s.aborted.Add(1)
		return false
	}
}

func (s *Server) startRunning() {
	if s.running.Add(1) == 1 {
		s.busyMu.Lock()
		s.busySince = time.Now()
		s.busyMu.Unlock()
	}
}

func (s *Server) release() {
	s.busyMu.Lock()
	if s.running.Add(-1) == 0 {
		s.busyTotal += time.Since(s.busySince)
	}
	s.busyMu.Unlock()
	if s.slots != nil {
		<-s.slots
	}
}

// outputTokens decides how many tokens a request generates.
func (s *Server) outputTokens(req request, id int64) int {
	n := req.maxTokens
	if s.cfg.EOSMeanTokens <= 0 || req.ignoreEOS || req.minTokens >= n {
		return n
	}
	// A geometric number of tokens, drawn from a hash of the request id.
	h := uint64(id)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 29
	u := (float64(h>>11) + 0.5) / (1 << 53)
	natural := 1 + int(-float64(s.cfg.EOSMeanTokens)*math.Log(u))
	return max(req.minTokens, min(n, natural))
}
