package runner

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// requestPanics turns a panic while building, sending or recording one
// request into that request's failure (error class internal): the run goes
// on. The first panic's stack is printed, once.
type requestPanics struct {
	log  *Logger
	once sync.Once
	// recording counts the results whose recording panicked (collect).
	recording atomic.Int64
}

// recoverInto is deferred around the work of one request: a panic becomes
// res's error. It must be called by defer directly (recover's rule).
func (rp *requestPanics) recoverInto(res *client.Result) {
	if v := recover(); v != nil {
		rp.record(res, v, debug.Stack())
	}
}

// record makes res an internal error for the panic value v.
func (rp *requestPanics) record(res *client.Result, v any, stack []byte) {
	msg := fmt.Sprint(v)
	if len(msg) > maxPanicMessage {
		msg = msg[:maxPanicMessage]
	}
	res.ErrorClass, res.Error = record.ErrInternal, msg
	res.End = max(res.End, res.Sent)
	rp.once.Do(func() {
		rp.log.Warnf("internal error in request %d: %v (a bug in fineserve-gen: the request is recorded as failed, class internal, and the run goes on; please report this stack, printed once)\n%s",
			res.Index, v, stack)
	})
}

// maxPanicMessage bounds a panic's message in a record, like a server's.
const maxPanicMessage = 512

// testHookPrompt, when set by a test, runs as each request's prompt is
// built (warm-up and run): a way to make a request panic.
var testHookPrompt func(a *arrival.Arrival)

// appendPrompt appends a's prompt to dst.
func appendPrompt(p *prompt.Builder, dst []byte, a *arrival.Arrival) []byte {
	if testHookPrompt != nil {
		testHookPrompt(a)
	}
	return p.Append(dst, a)
}
