package record

import (
	"bytes"
	"testing"
	"time"
)

// TestResetKeepsStorage: a reset record is empty but for the "not given"
// counts, and reuses its slices' storage.
func TestResetKeepsStorage(t *testing.T) {
	r := Request{Index: 7, TokenTimes: make([]time.Duration, 3, 8), Text: []byte("abc"), ErrorClass: ErrReset}
	tt := &r.TokenTimes[:1][0]
	r.Reset()
	if r.Index != 0 || r.ErrorClass != "" || len(r.TokenTimes) != 0 || len(r.Text) != 0 || r.PromptTokens != -1 || r.CachedTokens != -1 {
		t.Fatalf("after Reset: %+v", r)
	}
	if &r.TokenTimes[:1][0] != tt {
		t.Error("Reset dropped the token times' storage")
	}
}

// TestAppendTextBounded: text is kept only when asked for, and never past
// MaxKeptText.
func TestAppendTextBounded(t *testing.T) {
	var r Request
	r.AppendText([]byte("not kept"))
	if len(r.Text) != 0 {
		t.Fatalf("kept %q without KeepText", r.Text)
	}
	r.KeepText = true
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 6 {
		r.AppendText(chunk)
		r.AppendReasoning(chunk)
	}
	if len(r.Text) != MaxKeptText || len(r.Reasoning) != MaxKeptText {
		t.Errorf("kept %d and %d bytes, want %d each", len(r.Text), len(r.Reasoning), MaxKeptText)
	}
}

// TestToolCalls: calls are found by index, capped at MaxToolCalls, their
// arguments cut past MaxToolArgs, and counted with the invalid ones.
func TestToolCalls(t *testing.T) {
	var r Request
	c := r.ToolCallAt(0, []byte("id0"), []byte("f"))
	c.AddArgs([]byte(`{"a":`), 0)
	if again := r.ToolCallAt(0, []byte("other"), nil); again != c || again.ID != "id0" {
		t.Fatalf("index 0 found %+v", again)
	}
	r.ToolCallAt(1, nil, []byte("g")).AddArgs([]byte(`{}`), r.ToolArgsBytes())
	for i := 2; i < MaxToolCalls+5; i++ {
		r.ToolCallAt(i, nil, nil)
	}
	if len(r.Calls) != MaxToolCalls || r.ToolCallAt(MaxToolCalls+10, nil, nil) != nil {
		t.Fatalf("%d calls, want the cap %d", len(r.Calls), MaxToolCalls)
	}
	big := r.ToolCallAt(2, nil, nil)
	if n := big.AddArgs(make([]byte, MaxToolArgs), r.ToolArgsBytes()); n != r.ToolArgsBytes() || !big.Cut {
		t.Errorf("arguments past the bound: total %d, cut %v", n, big.Cut)
	}
	r.CountToolCalls()
	// Call 0 is cut-off JSON, call 2 was cut, calls 3… have no arguments
	// (not JSON either); only call 1's {} is valid.
	if r.ToolCalls != MaxToolCalls || r.ToolArgsInvalid != MaxToolCalls-1 {
		t.Errorf("counted %d calls, %d invalid", r.ToolCalls, r.ToolArgsInvalid)
	}
}

// TestClearAttempt: a retry forgets what the failed attempt saw and keeps
// the request's identity and first send.
func TestClearAttempt(t *testing.T) {
	r := Request{Index: 3, Sent: time.Second, Retries: 1, FirstToken: 2 * time.Second, TokenTimes: []time.Duration{1},
		Status: 500, ErrorClass: ErrHTTP5xx, CompletionTokens: 9, PromptTokens: 4, ResponseID: "r"}
	r.ClearAttempt()
	if r.Index != 3 || r.Sent != time.Second || r.Retries != 1 {
		t.Errorf("identity lost: %+v", r)
	}
	if r.FirstToken != 0 || len(r.TokenTimes) != 0 || r.Status != 0 || r.ErrorClass != "" || r.CompletionTokens != 0 || r.PromptTokens != -1 || r.ResponseID != "" {
		t.Errorf("attempt not cleared: %+v", r)
	}
	if !r.OK() || r.Lag() != time.Second {
		t.Errorf("OK %v, lag %v", r.OK(), r.Lag())
	}
}
