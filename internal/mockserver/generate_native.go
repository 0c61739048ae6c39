package mockserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fastjson"
)

// SGLang's native POST /generate and the KServe/Triton v2 generate
// extension (POST /v2/models/{model}/generate and generate_stream), as
// docs/WIRE_FORMATS.md describes them: completions' answers (no reasoning,
// tools or format) in their own shapes. /generate streams "data: {…}"
// chunks whose text is the WHOLE text so far, with a meta_info of counts,
// and ends with data: [DONE]; generate_stream streams one event per token
// whose text_output is the token's text, and ends with the body.
// Faults that answer before a response apply; those that break a body
// are not injected into these answers (they are served whole). Errors are
// in each server's shape (apierrors.go): KServe's {"error": "message"},
// SGLang's {"error": {"message": …}} for a request it cannot serve (400)
// and its OpenAI-style {"object": "error", …} for the other statuses.

// nativeAPI is which of the two a request speaks.
type nativeAPI uint8

const (
	nativeSGLang nativeAPI = iota
	nativeKServe
)

// parseNative reads a /generate or generate request.
func (s *Server) parseNative(body []byte, api nativeAPI, model string) (request, nativeOpts, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	var o nativeOpts
	v, err := parseObject(p, body)
	if err != nil {
		return request{}, o, badRequest(err.Error())
	}
	req := request{model: model, maxTokens: 16}
	var hb *blockHasher
	if s.prefix != nil {
		hb = new(blockHasher)
		hb.reset(req.model, s.prefix.blockTokens)
		req.prefix = hb
	}
	params := v.Get("parameters")
	maxName, minName := "max_tokens", "min_tokens"
	if api == nativeSGLang {
		req.model = s.cfg.Models[0]
		params = v.Get("sampling_params")
		maxName, minName = "max_new_tokens", "min_new_tokens"
		if ids := v.Get("input_ids"); ids != nil {
			items, err := ids.Array()
			if err != nil {
				return req, o, badRequest("input_ids: a list of token ids is required")
			}
			for _, it := range items {
				n, err := it.Uint64()
				if err != nil {
					return req, o, badRequest("input_ids: a list of token ids is required")
				}
				if hb != nil {
					hb.token(n)
				}
			}
			req.promptTokens = len(items)
		} else if t := v.Get("text"); t != nil && t.Type() == fastjson.TypeString {
			req.promptTokens = s.countText(t.GetStringBytes())
			if hb != nil {
				hb.words(t.GetStringBytes())
			}
		} else {
			return req, o, badRequest("text or input_ids: required")
		}
		req.stream = v.GetBool("stream")
	} else {
		t := v.Get("text_input")
		if t == nil || t.Type() != fastjson.TypeString {
			return req, o, badRequest("text_input: a string is required")
		}
		req.promptTokens = s.countText(t.GetStringBytes())
		if hb != nil {
			hb.words(t.GetStringBytes())
		}
		o.inputCounts = v.GetBool("return_num_input_tokens")
		o.outputCounts = v.GetBool("return_num_output_tokens")
	}
	if params != nil && params.Type() == fastjson.TypeObject {
		if err := intField(params, maxName, &req.maxTokens); err != nil {
			return req, o, badRequest(err.Error())
		}
		if err := intField(params, minName, &req.minTokens); err != nil {
			return req, o, badRequest(err.Error())
		}
		req.ignoreEOS = params.GetBool("ignore_eos")
	} else if params != nil && params.Type() != fastjson.TypeNull {
		return req, o, badRequest("parameters: an object is required")
	}
	if req.maxTokens < 1 {
		return req, o, badRequest(maxName + " must be at least 1, got " + strconv.Itoa(req.maxTokens))
	}
	if req.minTokens < 0 || req.minTokens > req.maxTokens {
		return req, o, badRequest(minName + " must be between 0 and " + maxName)
	}
	return req, o, nil
}

// nativeOpts is what a KServe request asks beyond a generation: the
// counts Triton's vLLM backend returns when asked (return_num_input_tokens,
// return_num_output_tokens).
type nativeOpts struct {
	inputCounts, outputCounts bool
}

func (s *Server) handleSGLang(w http.ResponseWriter, r *http.Request) {
	s.handleNative(w, r, nativeSGLang, false)
}

func (s *Server) handleKServe(stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.handleNative(w, r, nativeKServe, stream) }
}

func (s *Server) handleNative(w http.ResponseWriter, r *http.Request, api nativeAPI, stream bool) {
	var opts nativeOpts
	shape := sglangShape
	if api == nativeKServe {
		shape = kserveShape
	}
	s.serveGeneration(&shapedErrors{ResponseWriter: w, shape: shape}, r, generationAPI{
		parse: func(body []byte) (req request, err error) {
			req, opts, err = s.parseNative(body, api, r.PathValue("model"))
			if api == nativeKServe {
				req.stream = stream
			}
			return req, err
		},
		writer: func(g *generation, _ string, _ time.Time) answerWriter {
			return &nativeStream{g: g, api: api, opts: opts}
		},
		completed: s.countCompleted})
}

// nativeStream writes a /generate or generate answer.
type nativeStream struct {
	g    *generation
	api  nativeAPI
	opts nativeOpts
}

// appendObject appends the answer object after n tokens: SGLang's whole
// text so far and meta_info, or KServe's text_output of the tokens since
// the last (new of them: all of a whole answer, one of a stream's event).
func (ns *nativeStream) appendObject(b []byte, n, new int) []byte {
	g := ns.g
	if ns.api == nativeKServe {
		b = append(b, `{"model_name":`...)
		b = appendJSONString(b, []byte(g.req.model))
		b = append(b, `,"model_version":"1","text_output":"`...)
		for range new {
			b = append(b, tokenText...)
		}
		b = append(b, '"')
		if ns.opts.inputCounts {
			b = append(b, `,"num_input_tokens":`...)
			b = strconv.AppendInt(b, int64(g.req.promptTokens), 10)
		}
		if ns.opts.outputCounts {
			b = append(b, `,"num_output_tokens":`...)
			b = strconv.AppendInt(b, int64(new), 10)
		}
		return append(b, '}')
	}
	b = append(b, `{"text":"`...)
	for range n {
		b = append(b, tokenText...)
	}
	b = append(b, `","meta_info":{"id":"`...)
	if g.reqID != "" {
		b = append(b, g.reqID...)
	} else {
		b = strconv.AppendInt(b, g.id, 10)
	}
	b = append(b, `","finish_reason":`...)
	switch {
	case n < g.out:
		b = append(b, "null"...)
	case g.out < g.req.maxTokens:
		b = append(b, `{"type":"stop","matched":2}`...)
	default:
		b = append(b, `{"type":"length","length":`...)
		b = strconv.AppendInt(b, int64(g.out), 10)
		b = append(b, '}')
	}
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(g.req.promptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(g.cached), 10)
	return append(b, `}}`...)
}

// stream writes the event stream, token k at first + k·ITL; it reports
// false if the client left.
func (ns *nativeStream) stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool {
	return ns.g.streamTokens(ctx, w, first, tokenEvents{
		token: func(b []byte, k int) []byte {
			b = append(b, "data: "...)
			b = ns.appendObject(b, k+1, 1)
			return append(b, "\n\n"...)
		},
		end: func(b []byte) []byte {
			if ns.api == nativeSGLang {
				b = append(b, "data: [DONE]\n\n"...)
			}
			return b
		},
	})
}

// writeWhole writes the whole answer.
func (ns *nativeStream) writeWhole(w http.ResponseWriter) {
	writeJSON(w, ns.appendObject(nil, ns.g.out, ns.g.out))
}
