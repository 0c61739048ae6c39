package client

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Result is what the client observed of one request. Times are offsets from
// the run's epoch (Config.Epoch), so they compare with scheduled offsets.
type Result struct {
	Index int64
	Model string
	// Scheduled is when the request was due; Sent when it was handed to the
	// transport; FirstToken when the first chunk carrying text arrived (0
	// if none did); End when the last byte arrived or the request failed.
	Scheduled, Sent, FirstToken, End time.Duration
	// TokenTimes holds the arrival time of every chunk that carried text.
	TokenTimes []time.Duration
	// InputLen and OutputLen are the target sizes; Images the input images.
	InputLen, OutputLen, Images int
	// PromptTokens is the server's usage.prompt_tokens (-1 when not given);
	// CompletionTokens is usage.completion_tokens, else the chunks counted.
	PromptTokens, CompletionTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (-1 when
	// not given): prompt tokens served from the server's prefix cache.
	CachedTokens int
	// Status is the HTTP status (0 when no response arrived).
	Status int
	// ErrorClass is empty for a successful request, else one of the Err*
	// classes; Error is the message (truncated, never holding secrets).
	ErrorClass string
	Error      string
	// Retries counts extra attempts made for this request.
	Retries int
}

// Reset clears r for reuse, keeping its TokenTimes storage.
func (r *Result) Reset() {
	tt := r.TokenTimes[:0]
	*r = Result{TokenTimes: tt, PromptTokens: -1, CachedTokens: -1}
}

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.ErrorClass == "" }

// TTFT is the time from send to the first chunk carrying text (for a
// non-streamed request, to the whole response).
func (r *Result) TTFT() time.Duration { return r.FirstToken - r.Sent }

// E2E is the time from send to the last byte.
func (r *Result) E2E() time.Duration { return r.End - r.Sent }

// Lag is how late the request was sent: send time minus scheduled time.
func (r *Result) Lag() time.Duration { return r.Sent - r.Scheduled }

// OutputTokens is the number of generated tokens used for throughput and
// TPOT: the server's count when given, else the chunks counted.
func (r *Result) OutputTokens() int { return r.CompletionTokens }

// Error classes of failed requests.
const (
	ErrConnect  = "connect"  // the connection could not be made
	ErrTimeout  = "timeout"  // --request-timeout or --stall-timeout expired
	ErrHTTP4xx  = "http_4xx" // the server refused the request (not 429)
	ErrHTTP429  = "http_429" // the server asked to slow down
	ErrHTTP5xx  = "http_5xx" // the server failed
	ErrReset    = "reset"    // the connection broke while the response was read
	ErrProtocol = "protocol" // the response was not a valid OpenAI response or stream
	ErrCanceled = "canceled" // the run was stopped while the request was in flight
)

// ErrorClasses lists every class, in report order.
var ErrorClasses = []string{ErrConnect, ErrTimeout, ErrHTTP4xx, ErrHTTP429, ErrHTTP5xx, ErrReset, ErrProtocol, ErrCanceled}

// errStall marks a response that stopped sending for --stall-timeout.
var errStall = errors.New("no byte received within the stall timeout")

// classify maps a transport or read error to an error class.
func classify(ctx context.Context, err error, gotResponse bool) string {
	var ne net.Error
	switch {
	case errors.Is(err, errStall), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return ErrCanceled
	case errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrConnect
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrReset
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ErrConnect
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return ErrConnect
	}
	if !gotResponse {
		// The server closed the connection before answering: on a fresh
		// connection that is a refusal to serve, on a reused one a reset.
		if errors.Is(err, io.EOF) {
			return ErrReset
		}
		return ErrConnect
	}
	return ErrReset
}

// statusClass maps a non-200 HTTP status to an error class.
func statusClass(code int) string {
	switch {
	case code == 429:
		return ErrHTTP429
	case code >= 500:
		return ErrHTTP5xx
	default:
		return ErrHTTP4xx
	}
}
