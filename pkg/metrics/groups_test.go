package metrics

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func groupResult(images int, ok bool, ttft, e2e time.Duration, out int) *record.Request {
	r := &record.Request{InputLen: 100, OutputLen: out, Images: images, Sent: time.Second, PromptTokens: -1, CachedTokens: 16}
	r.FirstToken, r.End, r.CompletionTokens = r.Sent+ttft, r.Sent+e2e, out
	if !ok {
		r.ErrorClass = record.ErrHTTP5xx
	}
	return r
}

func TestGroups(t *testing.T) {
	kind := func(s *Sample) string { return s.Kind }
	a, b := NewGroups(kind), NewGroups(kind)
	a.Add(sampleOf(groupResult(0, true, 10*time.Millisecond, 110*time.Millisecond, 11)))
	a.Add(sampleOf(groupResult(2, true, 50*time.Millisecond, 250*time.Millisecond, 5)))
	b.Add(sampleOf(groupResult(0, true, 30*time.Millisecond, 130*time.Millisecond, 11)))
	b.Add(sampleOf(groupResult(1, false, 0, time.Millisecond, 5)))
	a.Merge(b)
	if k := a.Keys(); len(k) != 2 || k[0] != "image" || k[1] != "text" {
		t.Fatalf("keys %v", k)
	}
	sum := a.Summary(2 * time.Second)
	text, image := sum["text"], sum["image"]
	if text.Completed != 2 || text.Failed != 0 || text.TotalOutputTokens != 22 || text.RequestThroughput != 1 || text.OutputThroughput != 11 {
		t.Errorf("text %+v", text)
	}
	if math.Abs(text.MeanTTFT-20) > 1e-9 || math.Abs(text.MeanTPOT-10) > 1e-9 || text.CachedPromptTokens != 32 {
		t.Errorf("text latencies %+v", text)
	}
	if image.Completed != 1 || image.Failed != 1 || image.Images != 2 || math.Abs(image.P99E2E-250) > 0.5 {
		t.Errorf("image %+v", image)
	}
	raw, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]GroupSummary
	if err := json.Unmarshal(raw, &back); err != nil || back["image"] != image {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
	if s := NewGroups(kind).Summary(0); len(s) != 0 {
		t.Errorf("empty groups: %+v", s)
	}
}
