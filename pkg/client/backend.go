package client

import (
	"io"
	"net/http"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// wire is how one API kind's requests are written and its answers read:
// the kind's row (pkg/api) says what it is, its wire format says how it
// speaks. Adding an API kind is a row in pkg/api and a file of its own here
// for its wire format (as images.go): see docs/ARCHITECTURE.md.
type wire struct {
	// appendBody appends the JSON request body of req.
	appendBody func(c *Client, b []byte, req *Request) []byte
	// read consumes a 200 response's body (rd: the body as the stall
	// watch reads it) into res.
	read func(c *Client, d *decoder, resp *http.Response, rd io.Reader, res *Result) error
	// chunk reads one server-sent event's data of a stream (readStream):
	// the token it carries, whether it carried usage (copied into res)
	// and whether it ends the stream; streamEnd names what a complete
	// stream ends with, for the error when it does not (data: [DONE] ends
	// any stream). The kinds whose events are JSON objects read them
	// with jsonChunk, which parses an event and hands it to event.
	chunk func(c *Client, d *decoder, data []byte, res *Result) (kind tokenKind, usage, done bool, err error)
	event func(d *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error)
	// whole reads a whole JSON answer, parsed by readWholeAnswer, into res:
	// the generation kinds' read is readGeneration, which reads a stream
	// with chunk and a whole answer with whole.
	whole func(c *Client, v *fastjson.Value, res *Result) error
	// streamEnd is "" when a stream ends with the body (the KServe
	// generate_stream's answer has no end event).
	streamEnd string
	// streamSuffix is appended to the path when streaming
	// (generate_stream beside generate).
	streamSuffix string
	// keyHeader is the header the API key is sent in as it is ("":
	// Authorization: Bearer), and header the headers every request
	// carries (an API version).
	keyHeader string
	header    map[string]string
	// prepare, when set, readies a new client of the kind (New).
	prepare func(c *Client) error
	// contentType is the request body's type when it is not JSON
	// (multipart/form-data: an audio file).
	contentType string
}

// doneEvent is how completions and chat completions streams end.
const doneEvent = "data: [DONE]"

// textWire is completions' and chat completions' wire format.
var textWire = &wire{appendBody: appendTextBody, read: readGeneration, chunk: textChunk, whole: wholeText, streamEnd: doneEvent}

// wires maps each API kind to its wire format.
var wires = map[*api.Kind]*wire{
	api.VLLM:   textWire,
	api.OpenAI: textWire,
	api.Chat:   textWire,
	api.Responses: {appendBody: appendResponsesBody, read: readGeneration, chunk: jsonChunk, event: responsesEvent, whole: wholeResponses,
		streamEnd: responsesEnd, prepare: prepareResponses},
	api.Anthropic: {appendBody: appendAnthropicBody, read: readGeneration, chunk: jsonChunk, event: anthropicEvent, whole: wholeAnthropic,
		streamEnd: anthropicEnd, prepare: prepareAnthropic, keyHeader: "X-Api-Key", header: map[string]string{"Anthropic-Version": anthropicVersion}},
	api.SGLang: {appendBody: appendSGLangBody, read: readGeneration, chunk: jsonChunk, event: sglangEvent, whole: wholeSGLang,
		streamEnd: doneEvent},
	api.KServe: {appendBody: appendKServeBody, read: readGeneration, chunk: jsonChunk, event: kserveEvent, whole: wholeKServe,
		streamSuffix: "_stream"},
	api.Images:     {appendBody: (*Client).appendImageBody, read: readImages},
	api.Embeddings: {appendBody: appendEmbeddingsBody, read: readVectors},
	api.Pooling:    {appendBody: appendEmbeddingsBody, read: readVectors},
	api.Rerank:     {appendBody: appendRerankBody, read: readScores},
	api.Score:      {appendBody: appendScoreBody, read: readScores},
	api.Transcriptions: {appendBody: appendTranscriptionBody, read: readGeneration, chunk: jsonChunk, event: transcriptionEvent, whole: wholeTranscription,
		streamEnd: doneEvent, prepare: prepareTranscription, contentType: "multipart/form-data; boundary=" + formBoundary},
}

// readImages reads an image generation's answer (images.go).
func readImages(c *Client, d *decoder, _ *http.Response, rd io.Reader, res *Result) error {
	return c.readImages(d, rd, res)
}
