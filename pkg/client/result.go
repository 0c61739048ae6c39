package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The record of a request is pkg/record's, its error classes too
// (record.ErrConnect…); the client fills it.
type (
	Result    = record.Request
	ToolCall  = record.ToolCall
	AgentStep = record.AgentStep
)

// toolDeltas adds a delta's (or a whole message's) tool-call entries:
// an entry with an index not seen yet starts a call (a whole message's
// entries have no index: their position is theirs); its id, name and
// argument fragments are added to the call of its index. It reports
// whether an entry carried a name or arguments: an output token.
func toolDeltas(r *Result, entries []*fastjson.Value) (token bool) {
	args := r.ToolArgsBytes()
	for pos, e := range entries {
		idx := pos
		if n := e.Get("index"); n != nil && n.Type() == fastjson.TypeNumber {
			idx = n.GetInt()
		}
		call := r.ToolCallAt(idx, e.GetStringBytes("id"), e.GetStringBytes("function", "name"))
		if call == nil {
			continue
		}
		if len(e.GetStringBytes("function", "name")) > 0 {
			token = true
		}
		if a := e.GetStringBytes("function", "arguments"); len(a) > 0 {
			token = true
			args = call.AddArgs(a, args)
		}
	}
	return token
}

// errStall marks a response that stopped sending for --stall-timeout;
// errRequestTimeout a request that outlived --request-timeout.
var (
	// errCut is the cause of a planned cut (Request.CancelAfter).
	errCut            = errors.New("cancelled by the client (--cancel-after)")
	errStall          = fmt.Errorf("stall timeout: no byte received for the stall timeout: %w", context.DeadlineExceeded)
	errRequestTimeout = fmt.Errorf("request timeout expired: %w", context.DeadlineExceeded)
)

// classify maps a transport or read error to an error class. gotResponse
// tells whether the status line had arrived.
//
//   - timeout: one of our timers (request or stall timeout) expired, or a
//     network timeout;
//   - canceled: the run stopped while the request was in flight;
//   - connect: no connection could be made (refused, DNS, dial, TLS
//     handshake or certificate), or the server closed it without sending
//     a byte of response;
//   - reset: the connection broke (RST, or closed mid-response).
func classify(ctx context.Context, err error, gotResponse bool) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return record.ErrTimeout
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return record.ErrCanceled
	case errors.As(err, &ne) && ne.Timeout():
		return record.ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return record.ErrConnect
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.ErrUnexpectedEOF):
		return record.ErrReset
	}
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &rh) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		return record.ErrConnect
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.ErrConnect
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return record.ErrConnect
	}
	if !gotResponse {
		// The server accepted the connection and closed it without a byte
		// of response (or the client could not write the request).
		return record.ErrConnect
	}
	return record.ErrReset
}

// statusClass maps a non-200 HTTP status to an error class.
func statusClass(code int) string {
	switch {
	case code == 429:
		return record.ErrHTTP429
	case code >= 500:
		return record.ErrHTTP5xx
	case code >= 400:
		return record.ErrHTTP4xx
	default: // 1xx, 3xx or a 2xx other than 200: not an OpenAI answer
		return record.ErrProtocol
	}
}
