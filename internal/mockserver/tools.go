package mockserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/valyala/fastjson"
)

// ToolConfig is how chat requests with tools are answered. A request
// with tools (OpenAI's {"type":"function","function":{…}}) is answered
// with one call of one of them — arguments a JSON object valid against the
// function's parameters (schemaInstance), streamed as vLLM's tool parsers
// do — or with text, by tool_choice: "auto" (the default with tools) for a
// share CallShare of requests, "required" and a named function always,
// "none" never. Which requests call, which tool and which arguments are
// broken are pure functions of Config.Seed and the request's number.
type ToolConfig struct {
	// CallShare is the share of tool_choice "auto" requests answered with
	// a tool call, in [0, 1] (the command's default is 0.5).
	CallShare float64
	// InvalidShare is the share of tool calls whose arguments are not
	// valid JSON (their closing brace is cut off), in [0, 1].
	InvalidShare float64
	// NoAutoToolChoice answers tool_choice "auto" (sent, or implied by
	// tools) with vLLM's 400, as a server started without
	// --enable-auto-tool-choice does.
	NoAutoToolChoice bool
}

// StructuredConfig is how requests with a response_format of type
// json_schema or json_object are answered: the answer is a JSON instance
// valid against the schema (schemaInstance; any JSON object for
// json_object), made as long as the request's output length (about 4
// bytes a token: a free string of the instance is filled with words, else
// blanks follow the value), except a share InvalidShare that the schema
// rejects (its first required property left out) or that does not parse
// (cut before its last byte).
type StructuredConfig struct {
	InvalidShare float64
}

func validShare(name string, f float64) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("%s %g: want a share in [0, 1]", name, f)
	}
	return nil
}

// Tool choices of a request.
const (
	toolChoiceNone = iota
	toolChoiceAuto
	toolChoiceRequired
	toolChoiceNamed
)

// toolSpec is one function of a request's tools, with the arguments a call
// of it gets.
type toolSpec struct {
	name []byte
	args []byte
}

// apiError is a request's error in vLLM's current (nested) error shape.
type apiError struct {
	status   int
	typ, msg string
	param    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "BadRequestError", msg: msg}
}

// writeAPIError writes e in vLLM's error shape since v0.10.1:
// {"error":{"message","type","param","code"}}.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	b := []byte(`{"error":{"message":`)
	b = appendJSONString(b, []byte(e.msg))
	b = append(b, `,"type":`...)
	b = appendJSONString(b, []byte(e.typ))
	b = append(b, `,"param":`...)
	if e.param == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, []byte(e.param))
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, "}}"...)
	w.Write(b)
}

// maxTools bounds the tools of a request the server prepares calls of.
const maxTools = 128

// parseTools reads a chat request's tools and tool_choice (vLLM's
// check_tool_usage rules). flat reads the Responses API's flat function
// tools ({"type":"function","name","parameters"}).
func (s *Server) parseTools(v *fastjson.Value, req *request, flat bool) error {
	tv := v.Get("tools")
	tc := v.Get("tool_choice")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		if tc != nil && tc.Type() != fastjson.TypeNull && string(tc.GetStringBytes()) != "none" {
			return badRequest("When using `tool_choice`, `tools` must be set.")
		}
		return nil
	}
	list, err := tv.Array()
	if err != nil {
		return badRequest("tools: a list of tools is required")
	}
	if len(list) == 0 {
		return badRequest("tools: the list of tools must not be empty")
	}
	if len(list) > maxTools {
		return badRequest("tools: at most " + strconv.Itoa(maxTools) + " tools are supported")
	}
	for i, t := range list {
		fn := t
		if !flat {
			fn = t.Get("function")
		}
		name := fn.GetStringBytes("name")
		if fn == nil || len(name) == 0 {
			return badRequest("tools[" + strconv.Itoa(i) + "]: a function with a name is required")
		}
		args, _ := schemaInstance(fn.Get("parameters"), false)
		if args.b[0] != '{' {
			args.b = []byte("{}") // a function's arguments are an object
		}
		req.tools = append(req.tools, toolSpec{name: append([]byte(nil), name...), args: args.b})
	}
	req.toolChoice = toolChoiceAuto
	if tc != nil && tc.Type() != fastjson.TypeNull {
		switch tc.Type() {
		case fastjson.TypeString:
			switch string(tc.GetStringBytes()) {
			case "none":
				req.toolChoice = toolChoiceNone
			case "auto":
			case "required":
				req.toolChoice = toolChoiceRequired
			default:
				return badRequest("tool_choice: want none, auto, required or a named function")
			}
		case fastjson.TypeObject:
			name := tc.GetStringBytes("function", "name")
			if flat && name == nil {
				name = tc.GetStringBytes("name")
			}
			req.toolChoice, req.named = toolChoiceNamed, -1
			for i, t := range req.tools {
				if string(t.name) == string(name) {
					req.named = i
					break
				}
			}
			if req.named < 0 {
				return badRequest("Tool '" + string(name) + "' has not been passed in `tools`.")
			}
		default:
			return badRequest("tool_choice: want none, auto, required or a named function")
		}
	}
	if req.toolChoice == toolChoiceAuto && s.cfg.Tools.NoAutoToolChoice {
		return badRequest(`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	}
	return nil
}

// parseFormat reads a response_format (chat) or text.format (Responses).
func (s *Server) parseFormat(f *fastjson.Value, req *request, flat bool) error {
	if f == nil || f.Type() == fastjson.TypeNull {
		return nil
	}
	var schema *fastjson.Value
	switch string(f.GetStringBytes("type")) {
	case "", "text":
		return nil
	case "json_object":
	case "json_schema":
		if flat {
			schema = f.Get("schema")
		} else {
			js := f.Get("json_schema")
			if js == nil || js.Type() != fastjson.TypeObject {
				return badRequest("response_format: json_schema is required when type is json_schema")
			}
			schema = js.Get("schema")
		}
		if schema == nil {
			schema = new(fastjson.Value) // no schema: any JSON object
		}
	default:
		return badRequest("response_format: type " + strconv.Quote(string(f.GetStringBytes("type"))) + " is not supported")
	}
	if req.toolChoice == toolChoiceNamed {
		return badRequest("You can only either use constraints for structured outputs or tools, not both.")
	}
	fo := &outputFormat{}
	if schema == nil {
		fo.valid = instance{b: []byte(`{"text":""}`), padAt: len(`{"text":"`), padCap: -1}
	} else {
		fo.valid, _ = schemaInstance(schema, false)
		var omitted bool
		fo.invalid, omitted = schemaInstance(schema, true)
		if !omitted {
			fo.invalid = instance{}
		}
	}
	if fo.invalid.b == nil {
		// Not JSON at all: the valid instance without its last byte.
		fo.invalid = instance{b: fo.valid.b[:len(fo.valid.b)-1], padAt: -1}
		if fo.valid.padAt >= 0 && fo.valid.padAt < len(fo.invalid.b) {
			fo.invalid.padAt, fo.invalid.padCap = fo.valid.padAt, fo.valid.padCap
		}
	}
	req.format = fo
	return nil
}

// outputFormat is a request's structured output: the instance it is
// answered with, and the one of an invalid answer.
type outputFormat struct {
	valid, invalid instance
}

// toolCall is the call a response makes.
type toolCall struct {
	spec    *toolSpec
	id      string // chatcmpl-tool-<32 hex>
	named   bool   // tool_choice named this function (finish_reason "stop")
	invalid bool
}

// pickTool decides whether request id answers with a tool call and which.
func (s *Server) pickTool(req *request, id int64) *toolCall {
	if len(req.tools) == 0 {
		return nil
	}
	seed := s.cfg.Seed
	var spec *toolSpec
	switch req.toolChoice {
	case toolChoiceNone:
		return nil
	case toolChoiceAuto:
		if uniform(seed, id, streamToolCall) >= s.cfg.Tools.CallShare {
			return nil
		}
		fallthrough
	case toolChoiceRequired:
		spec = &req.tools[int(uniform(seed, id, streamToolPick)*float64(len(req.tools)))]
	case toolChoiceNamed:
		spec = &req.tools[req.named]
	}
	tc := &toolCall{spec: spec, named: req.toolChoice == toolChoiceNamed,
		invalid: uniform(seed, id, streamToolInvalid) < s.cfg.Tools.InvalidShare,
		id:      "chatcmpl-tool-" + hex32(seed, id)}
	return tc
}

// arguments returns the call's arguments text.
func (tc *toolCall) arguments() []byte {
	if tc.invalid {
		return tc.spec.args[:len(tc.spec.args)-1]
	}
	return tc.spec.args
}

// hex32 returns 32 hex digits drawn from the seed and the request.
func hex32(seed uint64, id int64) string {
	const digits = "0123456789abcdef"
	var b [32]byte
	for half := range 2 {
		h := mix(seed, id, streamToolID+uint64(half)*0x100)
		for i := range 16 {
			b[half*16+i] = digits[h>>(60-4*i)&15]
		}
	}
	return string(b[:])
}
