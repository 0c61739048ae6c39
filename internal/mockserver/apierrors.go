package mockserver

import (
	"net/http"
	"strconv"

	"github.com/valyala/fastjson"
)

// The server writes its errors, its own and injected faults, in vLLM's
// shapes (writeError, writeAPIError). The APIs of another server answer
// them in that server's shape instead: an errorShape rewrites each error
// answer (one Write) as its API's.

// errorShape is an API's error answers: recode maps vLLM's status to the
// API's (nil: kept), body appends the error object of a (vLLM) status
// and a message.
type errorShape struct {
	recode func(status int) int
	body   func(b []byte, status int, msg []byte) []byte
}

// The error shapes of the APIs that are not vLLM's.
var (
	// anthropicShape: {"type":"error","error":{"type","message"}}, a 503 as
	// Anthropic's 529 overloaded_error.
	anthropicShape = &errorShape{
		recode: func(status int) int {
			if status == http.StatusServiceUnavailable {
				return 529
			}
			return status
		},
		body: func(b []byte, status int, msg []byte) []byte {
			return appendAnthropicError(b, anthropicErrorType(status), msg)
		},
	}
	// kserveShape: Triton's {"error": "message"}, whatever the status
	// (Triton's HTTP frontend and its generate extension).
	kserveShape = &errorShape{body: func(b []byte, _ int, msg []byte) []byte {
		b = append(b, `{"error":`...)
		b = appendJSONString(b, msg)
		return append(b, '}')
	}}
	// sglangShape: SGLang's /generate answers a request it cannot serve (a
	// ValueError: 400) with {"error": {"message": …}}
	// (http_server.py's _create_error_response); other statuses come from
	// its HTTPException handler, in OpenAI's ErrorResponse shape with the
	// status as the type: {"object": "error", "message", "type": "503",
	// "param": null, "code": 503}.
	sglangShape = &errorShape{body: func(b []byte, status int, msg []byte) []byte {
		if status == http.StatusBadRequest {
			b = append(b, `{"error":{"message":`...)
			b = appendJSONString(b, msg)
			return append(b, "}}"...)
		}
		code := strconv.Itoa(status)
		b = append(b, `{"object":"error","message":`...)
		b = appendJSONString(b, msg)
		return append(b, `,"type":"`+code+`","param":null,"code":`+code+`}`...)
	}}
)

// shapedErrors is a ResponseWriter that writes error answers (a status of
// 400 or more) in shape's form.
type shapedErrors struct {
	http.ResponseWriter
	shape  *errorShape
	status int // vLLM's status of the error answer being written (0: none)
}

func (w *shapedErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *shapedErrors) WriteHeader(code int) {
	if code >= 400 {
		w.status = code
		if w.shape.recode != nil {
			code = w.shape.recode(code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *shapedErrors) Write(b []byte) (int, error) {
	if w.status == 0 {
		return w.ResponseWriter.Write(b)
	}
	_, err := w.ResponseWriter.Write(w.shape.body(nil, w.status, errorText(b)))
	return len(b), err
}

// errorText is the message of an error answer in vLLM's shapes
// ({"object":"error","message"} or {"error":{"message"}}), else the
// answer itself.
func errorText(b []byte) []byte {
	if v, err := fastjson.ParseBytes(b); err == nil {
		if msg := v.GetStringBytes("message"); msg != nil {
			return msg
		}
		if msg := v.GetStringBytes("error", "message"); msg != nil {
			return msg
		}
	}
	return b
}
