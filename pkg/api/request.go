package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// What every kind's requests may carry, and how they are sent: the
// settings the client takes beside the kind, with the checks that report a
// bad one before anything is sent.

// Request-shape bounds.
const (
	// MaxBatchSize bounds --batch-size (a kind with Batch).
	MaxBatchSize = 2048
	// DefaultAudioSeconds is --audio-seconds' default.
	DefaultAudioSeconds = 10.0
	// MaxAudioSeconds bounds --audio-seconds: 600 s is 19.2 MB a request.
	MaxAudioSeconds = 600.0
)

// AnswerOptions is what a request asks of the answer, sent only by a kind
// that supports it (Reasoning, Tools, ResponseFormat).
type AnswerOptions struct {
	// ReasoningEffort is sent as reasoning_effort (chat) or
	// reasoning.effort (responses).
	ReasoningEffort string
	// ChatTemplateKwargs is a JSON object sent as chat_template_kwargs
	// (chat), e.g. {"enable_thinking": false}.
	ChatTemplateKwargs json.RawMessage
	// Tools is OpenAI's chat tools array ([{"type":"function","function":
	// {"name",…}}]); ToolChoice is auto, required, none or a function's
	// name ("": the server's default).
	Tools      json.RawMessage
	ToolChoice string
	// ResponseFormat is OpenAI's response_format object ({"type":
	// "json_object"} or {"type":"json_schema","json_schema":{…}}).
	ResponseFormat json.RawMessage
	// Check tells whether an answer's text is valid against the response
	// format (nil: answers are not checked). With it, the client keeps each
	// answer's text and sets Result.Structured.
	Check func(text []byte) bool
	// KeepReasoning sends a session's earlier reasoning back in its
	// history (the assistant messages' "reasoning"); by default the
	// history carries the answers only, as chat clients do.
	KeepReasoning bool
}

// ParseExtraBody turns --extra-request-body (a JSON object, or empty) into
// body members (",k:v,…") and the set of default keys it overrides.
func ParseExtraBody(raw []byte) ([]byte, map[string]bool, error) {
	if len(bytes.Trim(raw, " \t\r\n")) == 0 {
		return nil, nil, nil
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("at byte %d: %w", se.Offset, err)
		}
		return nil, nil, fmt.Errorf("%w (want a JSON object, e.g. '{\"top_k\": 5}')", err)
	}
	if m == nil {
		return nil, nil, errors.New("want a JSON object, got null")
	}
	if end := dec.InputOffset(); len(bytes.Trim(raw[end:], " \t\r\n")) > 0 {
		return nil, nil, fmt.Errorf("trailing data after the JSON object at byte %d", end)
	}
	var b []byte
	omit := make(map[string]bool, len(m))
	for k, v := range m {
		key, _ := json.Marshal(k)
		b = append(b, ',')
		b = append(b, key...)
		b = append(b, ':')
		var compact bytes.Buffer
		if err := json.Compact(&compact, v); err != nil {
			return nil, nil, fmt.Errorf("%q: %w", k, err)
		}
		b = append(b, compact.Bytes()...)
		omit[k] = true
	}
	return b, omit, nil
}

// CheckExtraBody reports whether raw is a usable --extra-request-body (a
// JSON object, or empty), so a bad one is reported before anything is sent.
func CheckExtraBody(raw []byte) error {
	_, _, err := ParseExtraBody(raw)
	return err
}

// HTTP transports (--http-transport).
const (
	// TransportAuto is the lean transport for http:// targets and
	// net/http's transport, with HTTP/2 offered over TLS, for https://
	// targets and whenever a proxy applies.
	TransportAuto = "auto"
	// TransportLean is the lean HTTP/1.1 transport: plain HTTP only.
	TransportLean = "lean"
	// TransportNetHTTP is net/http's transport: HTTP/1.1 on http://; on
	// https:// HTTP/2 when the server picks it in the TLS handshake (ALPN),
	// else HTTP/1.1.
	TransportNetHTTP = "net/http"
	// TransportH2 is net/http's transport speaking HTTP/2 only: negotiated
	// in the TLS handshake on https:// (a server that does not pick h2 fails
	// the handshake), with prior knowledge (h2c) on http://.
	TransportH2 = "h2"
	// TransportHTTP1 is net/http's transport speaking HTTP/1.1 only.
	TransportHTTP1 = "http1"
	// TransportStd is the earlier name of net/http, still accepted.
	TransportStd = "std"
)

// CheckTransport reports whether name is a known transport (or empty, which
// means TransportAuto) that can reach baseURL.
func CheckTransport(name, baseURL string) error {
	switch name {
	case "", TransportAuto, TransportNetHTTP, TransportStd, TransportH2, TransportHTTP1:
		return nil
	case TransportLean:
		if strings.HasPrefix(strings.ToLower(baseURL), "https://") {
			return errors.New("the lean transport speaks plain HTTP only; an https:// target needs auto, net/http, h2 or http1")
		}
		return nil
	}
	return fmt.Errorf("unknown transport %q (want auto, lean, net/http, h2 or http1)", name)
}

// CheckHost reports whether h can be sent as a Host header (--host-header):
// a host name or address, with an optional port.
func CheckHost(h string) error {
	if h == "" {
		return nil
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c == 0x7f || strings.IndexByte(`/\@?#,;"`, c) >= 0 {
			return fmt.Errorf("%q: want a host name or address with an optional :port, e.g. api.example.com", h)
		}
	}
	return nil
}
