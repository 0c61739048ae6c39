package main

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// TestRequestIDsAreDistinct: with --request-id-prefix every request the
// server sees has an id of its own — the warm-up requests theirs
// (p-warmup-1, …), never a record's — and each record's id is one the
// server saw.
func TestRequestIDsAreDistinct(t *testing.T) {
	var out bytes.Buffer
	log := mockserver.NewChunkLog(&out, time.Hour)
	_, port := mocktest.Start(t, mockserver.Config{Chunks: log})
	r := mustRunTool(t, append(baseArgs(port, 5), "--warmup-requests", "2", "--request-id-prefix", "p-")...)
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := mockserver.ReadChunkLog(&out)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, c := range recs {
		seen = append(seen, c.RequestID)
	}
	slices.Sort(seen)
	want := []string{"p-0", "p-1", "p-2", "p-3", "p-4", "p-warmup-1", "p-warmup-2"}
	if !slices.Equal(seen, want) {
		t.Errorf("the server saw request ids %q, want %q", seen, want)
	}
	for _, rec := range readRecords(t, r.path("results.jsonl")) {
		if !slices.Contains(seen, rec.RequestID) {
			t.Errorf("record %d: request_id %q, not one the server saw", rec.Index, rec.RequestID)
		}
	}
}
