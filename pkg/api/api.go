// Package api is the table of API kinds a run can speak (--backend): each
// kind is a row of what it is — its endpoint, what its answers are measured
// by, and the set of things it supports. The row is resolved once from the
// command line and passed down; code reads its fields and capabilities and
// never compares kind names. The wire format of each kind (its request body
// and how its answer is read) is pkg/client's.
package api

import (
	"net/url"
	"strings"
)

// Measure is what a kind's answers are measured by.
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

// Tokens reports whether answers carry generated tokens (TTFT, ITL and
// TPOT apply).
func (m Measure) Tokens() bool { return m == MeasureTokens }

// Images reports whether answers are generated images, counted.
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

// ParseMeasure reads a measure's String ("tokens" for anything else).
func ParseMeasure(s string) Measure {
	for _, m := range []Measure{MeasureImages, MeasureVectors, MeasureScores} {
		if s == m.String() {
			return m
		}
	}
	return MeasureTokens
}

// Caps is a set of capabilities of a kind.
type Caps uint32

// The capabilities a kind may have.
const (
	// Messages: requests carry a messages list — a session's history,
	// content parts (input images) — and prompts are text, never token ids.
	Messages Caps = 1 << iota
	// Sessions: multi-turn conversations (--turns, --multi-turn) can be
	// sent: the answer's text can be kept and sent back.
	Sessions
	// VLLMServer: the name says the server is vLLM, so its /metrics is
	// scraped by default (--scrape-server-metrics).
	VLLMServer
	// ChatTwin: requests with input images go to the chat endpoint beside
	// the kind's path, through a chat client sharing the transport.
	ChatTwin
	// GeneratesImages: every request asks for images; prompts are text and
	// carry no input images.
	GeneratesImages
	// Reasoning: reasoning knobs (--reasoning-effort) are sent and
	// reasoning is read apart from the answer.
	Reasoning
	// Tools: tool calls (--tools).
	Tools
	// ResponseFormat: a response format (--response-format).
	ResponseFormat
	// HistoryItems: a session's tool calls and their results go back as
	// input items (function_call, function_call_output: the Responses
	// API), not as chat messages.
	HistoryItems
	// Chains: a session's turn can be chained to the previous answer
	// (previous_response_id, --responses-chain).
	Chains
	// Batch: a request carries --batch-size inputs answered one for one;
	// the arrival's input tokens are split over them.
	Batch
	// TextPrompts: prompts are text, never token ids (a rerank's query and
	// documents, an image generation's prompt).
	TextPrompts
	// Audio: a request sends a synthetic audio file of --audio-seconds
	// instead of a prompt.
	Audio
	// ContentBlocks: a session's answers go back in Anthropic's content
	// blocks (an assistant message's text and tool_use blocks, the tool
	// results as tool_result blocks of a user message), and input images
	// are not sent (chat's content parts are not the API's image blocks).
	ContentBlocks
	// ChatTemplate: a request carries --chat-template-kwargs as
	// chat_template_kwargs (vLLM's chat completions; the Responses and
	// Messages APIs have no such member).
	ChatTemplate
)

// Kind is one API kind: a row of the table.
type Kind struct {
	// Name is the --backend value.
	Name string
	// Path is the endpoint requests are posted to (--endpoint overrides).
	Path string
	// Help describes the row in --backend's help.
	Help string
	// Measure is what an answer is measured by.
	Measure Measure
	// Caps is what the kind supports.
	Caps Caps
}

// Has reports whether the kind has every capability of c.
func (k *Kind) Has(c Caps) bool { return k != nil && k.Caps&c == c }

// InputImages reports whether the kind's requests can carry input images
// (chat content parts, its own or its chat twin's).
func (k *Kind) InputImages() bool {
	return (k.Has(Messages) && !k.Has(ContentBlocks)) || k.Has(ChatTwin)
}

// ModelInPath is the placeholder of a row's path (or --endpoint) that the
// client replaces with the model's name: the KServe v2 protocol names the
// model in the URL (/v2/models/{model}/generate).
const ModelInPath = "{model}"

// ExpandPath returns path with ModelInPath replaced by model, escaped as a
// path segment.
func ExpandPath(path, model string) string {
	if !strings.Contains(path, ModelInPath) {
		return path
	}
	return strings.ReplaceAll(path, ModelInPath, url.PathEscape(model))
}

// String is the kind's name.
func (k *Kind) String() string {
	if k == nil {
		return ""
	}
	return k.Name
}

// The table's rows, in --backend's help order.
var (
	// VLLM is completions (/v1/completions, FineServe's default).
	VLLM = &Kind{Name: "vllm", Path: "/v1/completions", Help: "completions (/v1/completions)", Measure: MeasureTokens,
		Caps: Sessions | VLLMServer | ChatTwin | ResponseFormat}
	// OpenAI is completions on any OpenAI-compatible server.
	OpenAI = &Kind{Name: "openai", Path: "/v1/completions", Help: "completions (/v1/completions)", Measure: MeasureTokens,
		Caps: Sessions | ChatTwin | ResponseFormat}
	// Chat is chat completions.
	Chat = &Kind{Name: "openai-chat", Path: "/v1/chat/completions", Help: "chat completions (/v1/chat/completions)", Measure: MeasureTokens,
		Caps: Messages | Sessions | Reasoning | Tools | ResponseFormat | ChatTemplate}
	// Responses is OpenAI's Responses API.
	Responses = &Kind{Name: "openai-responses", Path: "/v1/responses", Help: "the Responses API (/v1/responses)", Measure: MeasureTokens,
		Caps: Messages | Sessions | Reasoning | Tools | ResponseFormat | HistoryItems | Chains}
	// Images is image generation.
	Images = &Kind{Name: "openai-images", Path: "/v1/images/generations", Help: "image generation (/v1/images/generations)", Measure: MeasureImages,
		Caps: GeneratesImages | TextPrompts}
	// Embeddings embeds a batch of inputs.
	Embeddings = &Kind{Name: "openai-embeddings", Path: "/v1/embeddings", Help: "embeddings of --batch-size inputs (/v1/embeddings)", Measure: MeasureVectors,
		Caps: Batch}
	// Pooling is vLLM's pooled outputs of a batch of inputs.
	Pooling = &Kind{Name: "vllm-pooling", Path: "/pooling", Help: "vLLM's pooled outputs of --batch-size inputs (/pooling)", Measure: MeasureVectors,
		Caps: Batch | VLLMServer}
	// Rerank is vLLM's rerank of a query and its documents.
	Rerank = &Kind{Name: "vllm-rerank", Path: "/rerank", Help: "vLLM's rerank of a query and --batch-size documents (/rerank; --endpoint /v1/rerank or /v2/rerank)", Measure: MeasureScores,
		Caps: Batch | TextPrompts | VLLMServer}
	// Score is vLLM's scores of a query against its documents.
	Score = &Kind{Name: "vllm-score", Path: "/score", Help: "vLLM's scores of a query against --batch-size documents (/score)", Measure: MeasureScores,
		Caps: Batch | TextPrompts | VLLMServer}
	// Anthropic is Anthropic's Messages API, as Anthropic, vLLM and SGLang
	// serve it: content blocks, thinking with a budget, tool use.
	Anthropic = &Kind{Name: "anthropic-messages", Path: "/v1/messages", Help: "Anthropic's Messages API (/v1/messages)", Measure: MeasureTokens,
		Caps: Messages | Sessions | Reasoning | Tools | ContentBlocks}
	// SGLang is SGLang's native generation endpoint: text or token ids in,
	// cumulative text out.
	SGLang = &Kind{Name: "sglang-generate", Path: "/generate", Help: "SGLang's native generation (/generate)", Measure: MeasureTokens,
		Caps: Sessions}
	// KServe is the KServe/Triton v2 protocol's generate extension: a
	// text prompt, the model named in the path.
	KServe = &Kind{Name: "kserve-generate", Path: "/v2/models/" + ModelInPath + "/generate",
		Help: "the KServe/Triton v2 generate extension (/v2/models/{model}/generate; generate_stream when streaming)", Measure: MeasureTokens,
		Caps: Sessions | TextPrompts}
	// Transcriptions is speech to text of a synthetic audio file.
	Transcriptions = &Kind{Name: "openai-transcriptions", Path: "/v1/audio/transcriptions", Help: "speech to text of a synthetic WAV of --audio-seconds (/v1/audio/transcriptions)", Measure: MeasureTokens,
		Caps: Audio}
)

// kinds is the table, in --backend's help order.
var kinds = []*Kind{VLLM, OpenAI, Chat, Responses, Anthropic, SGLang, KServe, Images, Embeddings, Pooling, Rerank, Score, Transcriptions}

// All returns the table's rows in order (callers must not modify them).
func All() []*Kind { return kinds }

// Lookup returns the row named name: the one place a name becomes a row.
func Lookup(name string) (*Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return nil, false
}

// With lists the names of the rows for which has is true, for messages:
// "openai-chat or openai-responses".
func With(has func(*Kind) bool) string {
	var names []string
	for _, k := range kinds {
		if has(k) {
			names = append(names, k.Name)
		}
	}
	return strings.Join(names, " or ")
}

// WithCaps lists the names of the rows that have every capability of c.
func WithCaps(c Caps) string { return With(func(k *Kind) bool { return k.Has(c) }) }

// Names lists the --backend values for messages: "a, b or c".
func Names() string {
	return OrList(kinds, func(k *Kind) string { return k.Name })
}

// OrList names the items of a table for a message: "a, b or c" (a
// table's values, as --backend's and --mode's errors list them).
func OrList[T any](items []T, name func(T) string) string {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = name(it)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Help is --backend's help text, from the table: rows with the same help
// share its line ("vllm or openai: completions (…)").
func Help() string {
	var parts []string
	for i := 0; i < len(kinds); {
		j, names := i+1, kinds[i].Name
		for ; j < len(kinds) && kinds[j].Help == kinds[i].Help; j++ {
			names += " or " + kinds[j].Name
		}
		parts = append(parts, names+": "+kinds[i].Help)
		i = j
	}
	return strings.Join(parts, "; ")
}
