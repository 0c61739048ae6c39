package metrics

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MergeStateVersion is the version of MergeState this build writes and
// reads.
const MergeStateVersion = 1

// MergeState is the summary's merge_state: everything besides its figures
// that merging summaries exactly needs — the run's distributions with their
// exact moments, every counter, the windows' distributions, the breakdowns
// (per_model, per_kind…) and goodput counts — and the run's exact length.
type MergeState struct {
	Version      int    `json:"version"`
	HistEncoding string `json:"hist_encoding"`
	// ElapsedNS is the run's length (the summary's duration) in
	// nanoseconds, from started_at.
	ElapsedNS int64                            `json:"elapsed_ns"`
	Collector CollectorState                   `json:"collector"`
	Windows   []WindowState                    `json:"windows,omitempty"`
	Groups    map[string]map[string]GroupState `json:"groups,omitempty"`
	// Endpoints holds the per-endpoint breakdown of a run with several
	// endpoints (endpoints.go).
	Endpoints []EndpointState `json:"endpoints,omitempty"`
	Goodput   *GoodputState   `json:"goodput,omitempty"`
	// Lengths holds the input and output length distributions (the
	// summary's length_histograms) in HistEncoding.
	Lengths map[string]string `json:"lengths,omitempty"`
	// Sessions holds a run of multi-turn sessions' figures (sessions.go).
	Sessions *SessionsState `json:"sessions,omitempty"`
	// Parts holds each Part's state by its key (part.go).
	Parts map[string]json.RawMessage `json:"parts,omitempty"`
}

// ShardInfo is the part of a schedule a summary covers: the shards (index %
// Count) it holds. A copy run with --shard I/N holds {N, [I]}; an unsharded
// run {1, [0]}; a merge the union of its inputs'.
type ShardInfo struct {
	Count   int64   `json:"count"`
	Indices []int64 `json:"indices"`
}

// String writes s as I/N, or {I,J,…}/N for several shards.
func (s ShardInfo) String() string {
	if len(s.Indices) == 1 {
		return fmt.Sprintf("%d/%d", s.Indices[0], s.Count)
	}
	parts := make([]string, len(s.Indices))
	for i, v := range s.Indices {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "{" + strings.Join(parts, ",") + "}/" + strconv.FormatInt(s.Count, 10)
}

// Check reports whether s is a valid part of a schedule: at least one index,
// every index in [0, Count) and none repeated.
func (s ShardInfo) Check() error {
	if s.Count < 1 || len(s.Indices) == 0 || int64(len(s.Indices)) > s.Count {
		return fmt.Errorf("shard: %d indices of %d", len(s.Indices), s.Count)
	}
	seen := map[int64]bool{}
	for _, i := range s.Indices {
		if i < 0 || i >= s.Count || seen[i] {
			return fmt.Errorf("shard: index %d of %d (repeated or out of range)", i, s.Count)
		}
		seen[i] = true
	}
	return nil
}

// MergedFrom is one summary a merged summary was made of.
type MergedFrom struct {
	File         string  `json:"file"`
	Shard        string  `json:"shard"`
	StartedAt    string  `json:"started_at"`
	Duration     float64 `json:"duration"`
	Completed    int64   `json:"completed"`
	Failed       int64   `json:"failed"`
	Seed         uint64  `json:"seed"`
	ScheduleHash string  `json:"schedule_hash,omitempty"`
	Command      string  `json:"command,omitempty"`
}

// Shift moves the collector's first send and last end by d, when it has
// seen a request: merging shifts each copy's times to the merged run's
// start.
func (c *Collector) Shift(d time.Duration) {
	if c.seen {
		c.FirstSent += d
		c.LastEnd += d
	}
}
