package mockserver

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fastjson"
)

// DefaultResponseStore is the mock-server's default number of stored
// responses (--responses-store).
const DefaultResponseStore = 10_000

// maxStoredBlocks bounds the prefix-cache blocks the stored responses'
// histories hold together (8 bytes each): the least recently used
// responses are forgotten beyond it.
const maxStoredBlocks = 1 << 22

// respMeta is what a Responses API request carries beyond a generation's
// figures: what its response object echoes, and its chaining.
type respMeta struct {
	prevID       string
	store        bool
	instructions []byte // raw JSON, nil: null
	tools        []byte // raw JSON, nil: []
	toolChoice   []byte // raw JSON, nil: "auto"
	text         []byte // raw JSON, nil: null
	temperature  []byte
	topP         []byte
	hist         *storedResponse // the previous response, when chained
}

// storedResponse is what a later request's previous_response_id needs of a
// response: its whole conversation's length and prefix-cache hashes.
type storedResponse struct {
	id     string
	tokens int          // input (history included) + answer tokens
	prefix *blockHasher // nil without a prefix cache
}

// responseStore is an LRU of stored responses, bounded in count and in
// prefix-cache blocks.
type responseStore struct {
	mu     sync.Mutex
	cap    int
	blocks int
	index  map[string]*list.Element
	lru    list.List // front: most recently used
}

func newResponseStore(n int) *responseStore {
	if n <= 0 {
		return nil
	}
	return &responseStore{cap: n, index: map[string]*list.Element{}}
}

func (st *responseStore) get(id string) *storedResponse {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.index[id]
	if !ok {
		return nil
	}
	st.lru.MoveToFront(e)
	return e.Value.(*storedResponse)
}

func (st *responseStore) put(r *storedResponse) {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.index[r.id] = st.lru.PushFront(r)
	st.blocks += r.blocks()
	for st.lru.Len() > st.cap || (st.blocks > maxStoredBlocks && st.lru.Len() > 1) {
		old := st.lru.Back()
		st.lru.Remove(old)
		or := old.Value.(*storedResponse)
		delete(st.index, or.id)
		st.blocks -= or.blocks()
	}
}

func (r *storedResponse) blocks() int {
	if r.prefix == nil {
		return 0
	}
	return len(r.prefix.blocks)
}

// StoredResponses returns how many responses are stored now.
func (s *Server) StoredResponses() int {
	if s.store == nil {
		return 0
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.lru.Len()
}

// rawCopy returns v's JSON text (nil for an absent value). The parser
// lets invalid string escapes such as "\0" through and writes them back as
// they came, so a copy that is not JSON is refused: the response echoes it.
func rawCopy(v *fastjson.Value) ([]byte, bool) {
	if v == nil {
		return nil, true
	}
	b := v.MarshalTo(nil)
	return b, json.Valid(b)
}

// parseResponses reads a /v1/responses request.
func (s *Server) parseResponses(body []byte) (request, respMeta, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	var meta respMeta
	v, err := p.ParseBytes(body)
	if err != nil {
		return request{}, meta, badRequest("invalid JSON body: " + err.Error())
	}
	req := request{model: s.modelOf(v), maxTokens: 16}
	meta.prevID = string(v.GetStringBytes("previous_response_id"))
	meta.store = true
	if st := v.Get("store"); st != nil && st.Type() == fastjson.TypeFalse {
		meta.store = false
	}
	for _, f := range []struct {
		key string
		to  *[]byte
	}{{"instructions", &meta.instructions}, {"tools", &meta.tools}, {"tool_choice", &meta.toolChoice},
		{"text", &meta.text}, {"temperature", &meta.temperature}, {"top_p", &meta.topP}} {
		var ok bool
		if *f.to, ok = rawCopy(v.Get(f.key)); !ok {
			return request{}, meta, badRequest("invalid JSON body: " + f.key + " is not valid JSON")
		}
	}
	if meta.prevID != "" {
		if meta.hist = s.store.get(meta.prevID); meta.hist == nil {
			return req, meta, &apiError{status: http.StatusNotFound, typ: "NotFoundError", msg: "Response with id '" + meta.prevID + "' not found."}
		}
	}
	var hb *blockHasher
	if s.prefix != nil {
		hb = new(blockHasher)
		if h := meta.hist; h != nil && h.prefix != nil {
			hb.per, hb.h, hb.n = h.prefix.per, h.prefix.h, h.prefix.n
			hb.blocks = append(make([]uint64, 0, len(h.prefix.blocks)+64), h.prefix.blocks...)
		} else {
			hb.reset(req.model, s.prefix.blockTokens)
		}
		req.prefix = hb
	}
	if meta.hist != nil {
		req.promptTokens = meta.hist.tokens
	}
	if ins := v.Get("instructions"); ins != nil && ins.Type() == fastjson.TypeString {
		req.promptTokens += s.countText(ins.GetStringBytes())
		if hb != nil {
			hb.words(ins.GetStringBytes())
		}
	}
	in := v.Get("input")
	if in == nil {
		return req, meta, badRequest("input: required")
	}
	switch in.Type() {
	case fastjson.TypeString:
		req.promptTokens += s.countText(in.GetStringBytes())
		if hb != nil {
			hb.words(in.GetStringBytes())
		}
	case fastjson.TypeArray:
		items, _ := in.Array()
		for _, it := range items {
			if err := s.responsesItem(it, &req, hb); err != nil {
				return req, meta, badRequest(err.Error())
			}
		}
	default:
		return req, meta, badRequest("input: a string or a list of input items is required")
	}
	if err := intField(v, "max_output_tokens", &req.maxTokens); err != nil {
		return req, meta, badRequest(err.Error())
	}
	if err := intField(v, "min_tokens", &req.minTokens); err != nil {
		return req, meta, badRequest(err.Error())
	}
	req.ignoreEOS = v.GetBool("ignore_eos")
	req.stream = v.GetBool("stream")
	req.usage = true
	if req.maxTokens < 1 {
		return req, meta, badRequest("max_output_tokens must be at least 1, got " + strconv.Itoa(req.maxTokens))
	}
	if req.minTokens < 0 || req.minTokens > req.maxTokens {
		return req, meta, badRequest("min_tokens must be between 0 and max_output_tokens")
	}
	if err := s.parseTools(v, &req, true); err != nil {
		return req, meta, err
	}
	if err := s.parseFormat(v.Get("text", "format"), &req, true); err != nil {
		return req, meta, err
	}
	return req, meta, nil
}

// responsesItem counts (and hashes) one input item: a message (content a
// string or input_text/output_text/input_image parts), a function call's
// arguments or a function call's output.
func (s *Server) responsesItem(it *fastjson.Value, req *request, hb *blockHasher) error {
	text := func(b []byte) {
		req.promptTokens += s.countText(b)
		if hb != nil {
			hb.words(b)
		}
	}
	switch typ := string(it.GetStringBytes("type")); typ {
	case "", "message":
		c := it.Get("content")
		if c == nil {
			return errors.New("input: a message needs content")
		}
		switch c.Type() {
		case fastjson.TypeString:
			text(c.GetStringBytes())
		case fastjson.TypeArray:
			parts, _ := c.Array()
			for _, part := range parts {
				switch pt := string(part.GetStringBytes("type")); pt {
				case "input_text", "output_text", "text":
					text(part.GetStringBytes("text"))
				case "input_image":
					req.images++
					n := s.imageTokens(imageURL(part))
					req.promptTokens += n
					if hb != nil {
						hb.image(part.GetStringBytes("image_url"), n)
					}
				default:
					return errors.New("input: content part type " + strconv.Quote(pt) + " is not supported")
				}
			}
		default:
			return errors.New("input: message content must be a string or a list of parts")
		}
	case "function_call":
		text(it.GetStringBytes("arguments"))
	case "function_call_output":
		text(it.GetStringBytes("output"))
	case "reasoning":
		// A previous reasoning item: not part of the prompt.
	default:
		return errors.New("input: item type " + strconv.Quote(typ) + " is not supported")
	}
	return nil
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var meta respMeta
	var rs *respStream
	s.serveGeneration(w, r, generationAPI{plan: true,
		parse: func(body []byte) (req request, err error) {
			req, meta, err = s.parseResponses(body)
			return req, err
		},
		writer: func(g *generation, _ string, _ time.Time) answerWriter {
			rs = &respStream{g: g, meta: &meta, id: "resp_" + hex32(s.cfg.Seed^0x5e5, g.id)}
			return rs
		},
		completed: func(g *generation) {
			if meta.store {
				s.store.put(&storedResponse{id: rs.id, tokens: g.req.promptTokens + g.out - g.reasoning, prefix: compact(g.req.prefix)})
			}
			s.countCompleted(g)
			s.countSpec(g.id, g.out)
			s.model.count(g)
		}})
}

// compact returns a copy of b whose blocks take no spare room.
func compact(b *blockHasher) *blockHasher {
	if b == nil {
		return nil
	}
	c := *b
	c.blocks = append([]uint64(nil), b.blocks...)
	return &c
}

// respStream writes a Responses API answer.
type respStream struct {
	g    *generation
	meta *respMeta
	id   string
	seq  int
}

func (rs *respStream) itemID(prefix string) string {
	return prefix + hex32(rs.g.s.cfg.Seed^uint64(len(prefix))<<40, rs.g.id)
}

// appendResponse appends the response object (ResponsesResponse's field
// order); done: completed (or incomplete) with its output and usage.
func (rs *respStream) appendResponse(b []byte, done bool) []byte {
	g, m := rs.g, rs.meta
	incomplete := done && g.tool == nil && g.out >= g.req.maxTokens
	b = append(b, `{"id":"`+rs.id+`","created_at":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"incomplete_details":`...)
	if incomplete {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":`...)
	b = appendRaw(b, m.instructions, "null")
	b = append(b, `,"metadata":null,"model":`...)
	b = appendJSONString(b, []byte(g.req.model))
	b = append(b, `,"object":"response","output":[`...)
	if done {
		b = rs.appendOutput(b)
	}
	b = append(b, `],"parallel_tool_calls":true,"temperature":`...)
	b = appendRaw(b, m.temperature, "1.0")
	b = append(b, `,"tool_choice":`...)
	b = appendRaw(b, m.toolChoice, `"auto"`)
	b = append(b, `,"tools":`...)
	b = appendRaw(b, m.tools, "[]")
	b = append(b, `,"top_p":`...)
	b = appendRaw(b, m.topP, "1.0")
	b = append(b, `,"background":false,"max_output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.req.maxTokens), 10)
	b = append(b, `,"max_tool_calls":null,"previous_response_id":`...)
	if m.prevID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, []byte(m.prevID))
	}
	b = append(b, `,"prompt":null,"reasoning":null,"service_tier":"auto","status":`...)
	switch {
	case !done:
		b = append(b, `"in_progress"`...)
	case incomplete:
		b = append(b, `"incomplete"`...)
	default:
		b = append(b, `"completed"`...)
	}
	b = append(b, `,"text":`...)
	b = appendRaw(b, m.text, "null")
	b = append(b, `,"top_logprobs":null,"truncation":"disabled","usage":`...)
	if done {
		b = rs.appendUsage(b)
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"user":null,"input_messages":null,"output_messages":null}`...)
}

func appendRaw(b, raw []byte, null string) []byte {
	if raw == nil {
		return append(b, null...)
	}
	return append(b, raw...)
}

// appendUsage appends ResponseUsage.
func (rs *respStream) appendUsage(b []byte) []byte {
	g := rs.g
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.req.promptTokens), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(g.cached), 10)
	b = append(b, `,"input_tokens_per_turn":[],"cached_tokens_per_turn":[]},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.out), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(g.reasoning), 10)
	b = append(b, `,"tool_output_tokens":0,"output_tokens_per_turn":[],"tool_output_tokens_per_turn":[]},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(g.req.promptTokens+g.out), 10)
	return append(b, '}')
}

func (rs *respStream) reasoningText() []byte {
	t := make([]byte, 0, rs.g.reasoning*len(reasoningText))
	for range rs.g.reasoning {
		t = append(t, reasoningText...)
	}
	return t
}

// appendOutput appends the finished output items: reasoning, then the
// message or the function call.
func (rs *respStream) appendOutput(b []byte) []byte {
	return rs.g.appendParts(b, func(b []byte) []byte { return rs.appendReasoningItem(b, true) },
		func(b []byte) []byte { return rs.appendCallItem(b, true) },
		func(b []byte) []byte { return rs.appendMessageItem(b, true) })
}

func (rs *respStream) appendReasoningItem(b []byte, done bool) []byte {
	b = append(b, `{"id":"`+rs.itemID("rs_")+`","summary":[],"type":"reasoning",`...)
	if !done {
		return append(b, `"status":"in_progress"}`...)
	}
	b = append(b, `"content":[{"text":`...)
	b = appendJSONString(b, rs.reasoningText())
	return append(b, `,"type":"reasoning_text"}],"encrypted_content":null,"status":"completed"}`...)
}

func (rs *respStream) appendMessageItem(b []byte, done bool) []byte {
	b = append(b, `{"id":"`+rs.itemID("msg_")+`","content":[`...)
	if done {
		b = rs.appendTextPart(b, rs.g.answerText())
		b = append(b, `],"role":"assistant","status":"completed","type":"message"}`...)
		return b
	}
	return append(b, `],"role":"assistant","status":"in_progress","type":"message"}`...)
}

func (rs *respStream) appendTextPart(b, text []byte) []byte {
	b = append(b, `{"annotations":[],"text":`...)
	b = appendJSONString(b, text)
	return append(b, `,"type":"output_text","logprobs":[]}`...)
}

func (rs *respStream) appendCallItem(b []byte, done bool) []byte {
	b = append(b, `{"arguments":`...)
	if done {
		b = appendJSONString(b, rs.g.answer)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"call_id":"`+rs.itemID("call_")+`","name":`...)
	b = appendJSONString(b, rs.g.tool.spec.name)
	b = append(b, `,"type":"function_call","id":"`+rs.itemID("fc_")+`","status":`...)
	if done {
		return append(b, `"completed"}`...)
	}
	return append(b, `"in_progress"}`...)
}

// event appends one SSE event: "event: typ", then its data, whose fields
// are in the OpenAI SDK's (alphabetical) order: pre's, sequence_number,
// post's (text-like fields sorting after it), type.
func (rs *respStream) event(b []byte, typ string, pre func([]byte) []byte, post func([]byte) []byte) []byte {
	b = append(b, "event: "+typ+"\ndata: {"...)
	if pre != nil {
		b = pre(b)
		b = append(b, ',')
	}
	b = append(b, `"sequence_number":`...)
	b = strconv.AppendInt(b, int64(rs.seq), 10)
	rs.seq++
	b = append(b, ',')
	if post != nil {
		b = post(b)
		b = append(b, ',')
	}
	return append(b, `"type":"`+typ+`"}`+"\n\n"...)
}

// indexes appends content_index (when part), item_id and output_index.
func indexes(b []byte, part bool, item string, output int) []byte {
	if part {
		b = append(b, `"content_index":0,`...)
	}
	b = append(b, `"item_id":"`+item+`","output_index":`...)
	return strconv.AppendInt(b, int64(output), 10)
}

// itemEvent appends the response.output_item.added event (done: .done) of
// the output item that item appends, at output index out.
func (rs *respStream) itemEvent(b []byte, item func(b []byte, done bool) []byte, done bool, out int) []byte {
	typ := "response.output_item.added"
	if done {
		typ = "response.output_item.done"
	}
	return rs.event(b, typ, func(b []byte) []byte {
		b = item(append(b, `"item":`...), done)
		b = append(b, `,"output_index":`...)
		return strconv.AppendInt(b, int64(out), 10)
	}, nil)
}

// appendToken appends the events of output token k.
func (rs *respStream) appendToken(b []byte, k int) []byte {
	g := rs.g
	rid := rs.itemID("rs_")
	if k < g.reasoning {
		if k == 0 {
			b = rs.itemEvent(b, rs.appendReasoningItem, false, 0)
			b = rs.event(b, "response.content_part.added", func(b []byte) []byte {
				b = indexes(b, true, rid, 0)
				return append(b, `,"part":{"text":"","type":"reasoning_text"}`...)
			}, nil)
		}
		return rs.event(b, "response.reasoning_text.delta", func(b []byte) []byte {
			b = append(b, `"content_index":0,"delta":"`+reasoningText+`",`...)
			return indexes(b, false, rid, 0)
		}, nil)
	}
	out := 0
	if g.reasoning > 0 {
		out = 1
	}
	j := k - g.reasoning
	if j == 0 {
		if g.reasoning > 0 {
			b = rs.reasoningDone(b)
		}
		item := rs.appendMessageItem
		if g.tool != nil {
			item = rs.appendCallItem
		}
		b = rs.itemEvent(b, item, false, out)
		if g.tool == nil {
			b = rs.event(b, "response.content_part.added", func(b []byte) []byte {
				b = indexes(b, true, rs.itemID("msg_"), out)
				b = append(b, `,"part":`...)
				return rs.appendTextPart(b, nil)
			}, nil)
		}
	}
	if g.tool != nil {
		return rs.event(b, "response.function_call_arguments.delta", func(b []byte) []byte {
			b = append(b, `"delta":`...)
			b = appendJSONString(b, g.fragment(j))
			b = append(b, ',')
			return indexes(b, false, rs.itemID("fc_"), out)
		}, nil)
	}
	return rs.event(b, "response.output_text.delta", func(b []byte) []byte {
		b = append(b, `"content_index":0,"delta":`...)
		if g.answer != nil {
			b = appendJSONString(b, g.fragment(j))
		} else {
			b = append(b, `"`+tokenText+`"`...)
		}
		b = append(b, `,"item_id":"`+rs.itemID("msg_")+`","logprobs":[],"output_index":`...)
		return strconv.AppendInt(b, int64(out), 10)
	}, nil)
}

// reasoningDone appends the events that close the reasoning item.
func (rs *respStream) reasoningDone(b []byte) []byte {
	rid := rs.itemID("rs_")
	text := rs.reasoningText()
	b = rs.event(b, "response.reasoning_text.done", func(b []byte) []byte { return indexes(b, true, rid, 0) },
		func(b []byte) []byte { return appendJSONString(append(b, `"text":`...), text) })
	b = rs.event(b, "response.content_part.done", func(b []byte) []byte {
		b = indexes(b, true, rid, 0)
		b = append(b, `,"part":{"text":`...)
		b = appendJSONString(b, text)
		return append(b, `,"type":"reasoning_text"}`...)
	}, nil)
	return rs.itemEvent(b, rs.appendReasoningItem, true, 0)
}

// appendEnd appends the events after the last token: the open item's done
// events and response.completed.
func (rs *respStream) appendEnd(b []byte) []byte {
	g := rs.g
	out := 0
	if g.reasoning > 0 {
		out = 1
	}
	switch {
	case g.out == g.reasoning:
		if g.reasoning > 0 {
			b = rs.reasoningDone(b)
		}
	case g.tool != nil:
		fid := rs.itemID("fc_")
		b = rs.event(b, "response.function_call_arguments.done", func(b []byte) []byte {
			b = append(b, `"arguments":`...)
			b = appendJSONString(b, g.answer)
			b = append(b, `,"item_id":"`+fid+`","name":`...)
			b = appendJSONString(b, g.tool.spec.name)
			b = append(b, `,"output_index":`...)
			return strconv.AppendInt(b, int64(out), 10)
		}, nil)
		b = rs.itemEvent(b, rs.appendCallItem, true, out)
	default:
		mid := rs.itemID("msg_")
		text := g.answerText()
		b = rs.event(b, "response.output_text.done", func(b []byte) []byte {
			b = append(b, `"content_index":0,"item_id":"`+mid+`","logprobs":[],"output_index":`...)
			return strconv.AppendInt(b, int64(out), 10)
		}, func(b []byte) []byte { return appendJSONString(append(b, `"text":`...), text) })
		b = rs.event(b, "response.content_part.done", func(b []byte) []byte {
			b = indexes(b, true, mid, out)
			b = append(b, `,"part":`...)
			return rs.appendTextPart(b, text)
		}, nil)
		b = rs.itemEvent(b, rs.appendMessageItem, true, out)
	}
	return rs.event(b, "response.completed", func(b []byte) []byte {
		return rs.appendResponse(append(b, `"response":`...), true)
	}, nil)
}

// stream writes the event stream (no [DONE]: the Responses API's stream
// ends with response.completed); it reports false if the client left.
func (rs *respStream) stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool {
	return rs.g.streamTokens(ctx, w, first, tokenEvents{
		start: func(b []byte) []byte {
			b = rs.event(b, "response.created", func(b []byte) []byte { return rs.appendResponse(append(b, `"response":`...), false) }, nil)
			return rs.event(b, "response.in_progress", func(b []byte) []byte { return rs.appendResponse(append(b, `"response":`...), false) }, nil)
		},
		token: rs.appendToken,
		end:   rs.appendEnd,
	})
}

// writeWhole writes the whole response.
func (rs *respStream) writeWhole(w http.ResponseWriter) { writeJSON(w, rs.appendResponse(nil, true)) }
