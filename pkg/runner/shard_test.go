package runner

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestWaitForStartSleepsUntilStartAt(t *testing.T) {
	startAt := time.Now().Add(150 * time.Millisecond).Round(0)
	var log bytes.Buffer
	start, err := waitForStart(context.Background(), startAt, NewLogger(&log, false))
	if err != nil {
		t.Fatal(err)
	}
	if !start.Equal(startAt) || time.Now().Before(startAt) {
		t.Errorf("started %v, want %v", start, startAt)
	}
	if !strings.Contains(log.String(), "start-at: waiting") {
		t.Errorf("log %q", log.String())
	}
	// A stopped run does not wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	startAt = time.Now().Add(time.Hour)
	if _, err := waitForStart(ctx, startAt, NewLogger(io.Discard, false)); err == nil {
		t.Error("waited an hour through a canceled context")
	}
}
