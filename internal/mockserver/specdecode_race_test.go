package mockserver

import (
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
)

// A scrape reads the spec-decode counters together: while requests are
// counted, every /metrics shows K draft tokens a draft (read one by one,
// a scrape could see a draft's tokens before the draft).
func TestSpecCountersScrapedTogether(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, SpecDecode: SpecDecodeConfig{K: 2, Accept: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	drafts := regexp.MustCompile(`(?m)^vllm:spec_decode_num_drafts_total\{[^}]*\} (\S+)$`)
	tokens := regexp.MustCompile(`(?m)^vllm:spec_decode_num_draft_tokens_total\{[^}]*\} (\S+)$`)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := int64(0); ; id++ {
			select {
			case <-stop:
				return
			default:
				s.countSpec(id, 40)
			}
		}
	})
	for range 300 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body := rec.Body.String()
		d, t1 := drafts.FindStringSubmatch(body), tokens.FindStringSubmatch(body)
		if d == nil || t1 == nil {
			t.Fatalf("no spec-decode counters in /metrics")
		}
		nd, _ := strconv.ParseFloat(d[1], 64)
		nt, _ := strconv.ParseFloat(t1[1], 64)
		if nt != 2*nd {
			t.Fatalf("a scrape shows %g drafts and %g draft tokens, want 2 a draft", nd, nt)
		}
	}
	close(stop)
	wg.Wait()
}
