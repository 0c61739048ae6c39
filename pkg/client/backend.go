package client

import (
	"io"
	"net/http"

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
	// any stream).
	chunk func(c *Client, d *decoder, data []byte, res *Result) (kind tokenKind, usage, done bool, err error)
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
var textWire = &wire{appendBody: appendTextBody, read: readText, chunk: textChunk, streamEnd: doneEvent}

// wires maps each API kind to its wire format.
var wires = map[*api.Kind]*wire{
	api.VLLM:      textWire,
	api.OpenAI:    textWire,
	api.Chat:      textWire,
	api.Responses: {appendBody: appendResponsesBody, read: readResponses, chunk: responsesChunk, streamEnd: responsesEnd, prepare: prepareResponses},
	api.Anthropic: {appendBody: appendAnthropicBody, read: readAnthropic, chunk: anthropicChunk, streamEnd: anthropicEnd, prepare: prepareAnthropic,
		keyHeader: "X-Api-Key", header: map[string]string{"Anthropic-Version": anthropicVersion}},
	api.SGLang:     {appendBody: appendSGLangBody, read: readSGLang, chunk: sglangChunk, streamEnd: doneEvent},
	api.KServe:     {appendBody: appendKServeBody, read: readKServe, chunk: kserveChunk, streamSuffix: "_stream"},
	api.Images:     {appendBody: (*Client).appendImageBody, read: readImages},
	api.Embeddings: {appendBody: appendEmbeddingsBody, read: readVectors},
	api.Pooling:    {appendBody: appendEmbeddingsBody, read: readVectors},
	api.Rerank:     {appendBody: appendRerankBody, read: readScores},
	api.Score:      {appendBody: appendScoreBody, read: readScores},
	api.Transcriptions: {contentType: "multipart/form-data; boundary=" + formBoundary, appendBody: appendTranscriptionBody, read: readTranscription,
		chunk: transcriptionChunk, streamEnd: doneEvent, prepare: prepareTranscription},
}

// readText reads a text generation's answer: a server-sent event stream,
// or a whole JSON response when streaming is off or the server answers
// with JSON anyway.
func readText(c *Client, d *decoder, resp *http.Response, rd io.Reader, res *Result) error {
	if c.cfg.Stream && !isJSON(resp) {
		return c.readStream(d, resp.Body, res)
	}
	return c.readWhole(d, rd, res)
}

// readImages reads an image generation's answer (images.go).
func readImages(c *Client, d *decoder, _ *http.Response, rd io.Reader, res *Result) error {
	return c.readImages(d, rd, res)
}
