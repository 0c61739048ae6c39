package client

import (
	"io"
	"net/http"
	"strings"
)

// Backends: the --backend names of the table's rows. Code outside this file
// reads a row's fields (Backend), never compares these names.
const (
	BackendVLLM   = "vllm"          // /v1/completions (FineServe's default)
	BackendOpenAI = "openai"        // /v1/completions
	BackendChat   = "openai-chat"   // /v1/chat/completions
	BackendImages = "openai-images" // /v1/images/generations (images.go)
	// BackendResponses is OpenAI's Responses API (responses.go).
	BackendResponses = "openai-responses" // /v1/responses
	// The pooling APIs (pooling.go): a batch of inputs, answered with one
	// vector or score each.
	BackendEmbeddings = "openai-embeddings" // /v1/embeddings
	BackendRerank     = "vllm-rerank"       // /rerank
	BackendScore      = "vllm-score"        // /score
	BackendPooling    = "vllm-pooling"      // /pooling
	// BackendTranscriptions is speech to text (transcription.go).
	BackendTranscriptions = "openai-transcriptions" // /v1/audio/transcriptions
)

// Measure is what a backend's responses are measured by.
type Measure uint8

const (
	// MeasureTokens: a stream (or a whole answer) of generated tokens:
	// TTFT, ITL, TPOT and token throughput apply.
	MeasureTokens Measure = iota
	// MeasureImages: generated images, counted: end-to-end latency and
	// images per second; no token figures.
	MeasureImages
	// MeasureVectors: one vector (an embedding, a pooled output) per
	// input, counted and sized, never kept: end-to-end latency, requests
	// and input tokens per second; no token figures.
	MeasureVectors
	// MeasureScores: one score per document of a query (rerank, score),
	// counted: as MeasureVectors.
	MeasureScores
)

// Tokens reports whether responses carry generated tokens (TTFT, ITL and
// TPOT apply).
func (m Measure) Tokens() bool { return m == MeasureTokens }

// Images reports whether responses are generated images, counted.
func (m Measure) Images() bool { return m == MeasureImages }

// Batches reports whether a request carries a batch of inputs answered
// one for one (vectors or scores).
func (m Measure) Batches() bool { return m == MeasureVectors || m == MeasureScores }

// String names the measure as the summary's pooling section does.
func (m Measure) String() string {
	switch m {
	case MeasureImages:
		return "images"
	case MeasureVectors:
		return "vectors"
	case MeasureScores:
		return "scores"
	}
	return "tokens"
}

// Backend is one API kind: a row of the backend table. Everything that
// differs between API kinds — the endpoint, the request body, how a
// response is read, what it measures and what it supports — is a field of
// its row; options, the workload, the metrics and the runner read the row.
//
// Adding an API kind is a row here and a file of its own for its wire
// format (as images.go): see docs/ARCHITECTURE.md.
type Backend struct {
	// Name is the --backend value.
	Name string
	// Path is the endpoint requests are posted to (--endpoint overrides).
	Path string
	// Help describes the row in --backend's help.
	Help string
	// Measure is what a response is measured by.
	Measure Measure
	// Chat: requests carry a messages list — a session's history, content
	// parts (input images) — and prompts are text, never token ids.
	Chat bool
	// Sessions: multi-turn conversations (--turns, --multi-turn) can be
	// sent: the answer's text can be kept and sent back.
	Sessions bool
	// VLLM: the name says the server is vLLM, so its /metrics is scraped
	// by default (--scrape-server-metrics).
	VLLM bool
	// ChatTwin: requests with input images (Request.Chat) go to the chat
	// endpoint beside Path, through a chat client sharing the transport.
	ChatTwin bool
	// GeneratesImages: every request asks for images (Result.Generate);
	// prompts are text and carry no input images.
	GeneratesImages bool
	// Reasoning: reasoning knobs (--reasoning-effort) are sent and
	// reasoning is read apart from the answer; Tools: tool calls (--tools);
	// ResponseFormat: a response format (--response-format).
	Reasoning, Tools, ResponseFormat bool

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
	chunk     func(c *Client, d *decoder, data []byte, res *Result) (kind tokenKind, usage, done bool, err error)
	streamEnd string
	// HistoryItems: a session's tool calls and their results go back as
	// input items (function_call, function_call_output: the Responses
	// API), not as chat messages. Chains: a session's turn can be chained
	// to the previous answer (previous_response_id, --responses-chain).
	HistoryItems, Chains bool
	// prepare, when set, readies a new client of the row (New).
	prepare func(c *Client) error
	// Batch: a request carries --batch-size inputs (Request.AppendInput),
	// answered one for one; the arrival's input tokens are split over
	// them (BatchLens).
	Batch bool
	// TextPrompts: prompts are text, never token ids (a rerank's query
	// and documents, an image generation's prompt).
	TextPrompts bool
	// ContentType is the request body's type when it is not JSON
	// (multipart/form-data: an audio file).
	ContentType string
	// Audio: a request sends a synthetic audio file of --audio-seconds
	// (audio.go) instead of a prompt.
	Audio bool
}

// doneEvent is how completions and chat completions streams end.
const doneEvent = "data: [DONE]"

// backends is the table: one row per API kind, in --backend's help order.
var backends = []*Backend{
	{Name: BackendVLLM, Path: "/v1/completions", Help: "completions (/v1/completions)", Measure: MeasureTokens,
		Sessions: true, VLLM: true, ChatTwin: true, ResponseFormat: true, appendBody: appendTextBody, read: readText, chunk: textChunk, streamEnd: doneEvent},
	{Name: BackendOpenAI, Path: "/v1/completions", Help: "completions (/v1/completions)", Measure: MeasureTokens,
		Sessions: true, ChatTwin: true, ResponseFormat: true, appendBody: appendTextBody, read: readText, chunk: textChunk, streamEnd: doneEvent},
	{Name: BackendChat, Path: "/v1/chat/completions", Help: "chat completions (/v1/chat/completions)", Measure: MeasureTokens,
		Chat: true, Sessions: true, Reasoning: true, Tools: true, ResponseFormat: true, appendBody: appendTextBody, read: readText, chunk: textChunk, streamEnd: doneEvent},
	{Name: BackendResponses, Path: "/v1/responses", Help: "the Responses API (/v1/responses)", Measure: MeasureTokens,
		Chat: true, Sessions: true, Reasoning: true, Tools: true, ResponseFormat: true, HistoryItems: true, Chains: true,
		appendBody: appendResponsesBody, read: readResponses, chunk: responsesChunk, streamEnd: responsesEnd, prepare: prepareResponses},
	{Name: BackendImages, Path: "/v1/images/generations", Help: "image generation (/v1/images/generations)", Measure: MeasureImages,
		GeneratesImages: true, TextPrompts: true, appendBody: (*Client).appendImageBody, read: readImages},
	{Name: BackendEmbeddings, Path: "/v1/embeddings", Help: "embeddings of --batch-size inputs (/v1/embeddings)", Measure: MeasureVectors,
		Batch: true, appendBody: appendEmbeddingsBody, read: readVectors},
	{Name: BackendPooling, Path: "/pooling", Help: "vLLM's pooled outputs of --batch-size inputs (/pooling)", Measure: MeasureVectors,
		Batch: true, VLLM: true, appendBody: appendEmbeddingsBody, read: readVectors},
	{Name: BackendRerank, Path: "/rerank", Help: "vLLM's rerank of a query and --batch-size documents (/rerank; --endpoint /v1/rerank or /v2/rerank)", Measure: MeasureScores,
		Batch: true, TextPrompts: true, VLLM: true, appendBody: appendRerankBody, read: readScores},
	{Name: BackendScore, Path: "/score", Help: "vLLM's scores of a query against --batch-size documents (/score)", Measure: MeasureScores,
		Batch: true, TextPrompts: true, VLLM: true, appendBody: appendScoreBody, read: readScores},
	{Name: BackendTranscriptions, Path: "/v1/audio/transcriptions", Help: "speech to text of a synthetic WAV of --audio-seconds (/v1/audio/transcriptions)", Measure: MeasureTokens,
		Audio: true, ContentType: "multipart/form-data; boundary=" + formBoundary, appendBody: appendTranscriptionBody, read: readTranscription,
		chunk: transcriptionChunk, streamEnd: doneEvent, prepare: prepareTranscription},
}

// InputImages reports whether the row's requests can carry input images
// (chat content parts, its own or its chat twin's).
func (b *Backend) InputImages() bool { return b.Chat || b.ChatTwin }

// BackendsWith lists the names of the rows for which has is true, for
// messages: "openai-chat or openai-responses".
func BackendsWith(has func(*Backend) bool) string {
	var names []string
	for _, b := range backends {
		if has(b) {
			names = append(names, b.Name)
		}
	}
	return strings.Join(names, " or ")
}

// LookupBackend returns the row named name.
func LookupBackend(name string) (*Backend, bool) {
	for _, b := range backends {
		if b.Name == name {
			return b, true
		}
	}
	return nil, false
}

// Backends returns the table's rows in order (callers must not modify them).
func Backends() []*Backend { return backends }

// BackendNames lists the --backend values for messages: "a, b or c".
func BackendNames() string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// BackendHelp is --backend's help text, from the table: rows with the same
// help share its line ("vllm or openai: completions (…)").
func BackendHelp() string {
	var parts []string
	for i := 0; i < len(backends); {
		j, names := i+1, backends[i].Name
		for ; j < len(backends) && backends[j].Help == backends[i].Help; j++ {
			names += " or " + backends[j].Name
		}
		parts = append(parts, names+": "+backends[i].Help)
		i = j
	}
	return strings.Join(parts, "; ")
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
