package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestAnalyzeHandComputed runs analyze on the text-to-image fixture's scene
// A with 2-slot caches. Its LoRA uses in time order (one LoRA a request;
// the row listed out of order in the file is the last request) are
//
//	overall:     a a d a b e c b d c b e c a
//	10.0.0.1:    a a   a b   c b   c b   c a   = a a a b c b c b c a
//	10.0.0.2:        d     e     d     e       = d e d e
//
// By hand, 2 slots (LRU evicts the least recently used; LFU the least used
// since loaded, ties to the least recent):
//
//	overall LRU: a(load 1) a d(2) a b(3, evicts d) e(4, a) c(5, b) b(6, e)
//	             d(7, c) c(8, b) b(9, d) e(10, c) c(11, b) a(12, e) → 12 loads
//	overall LFU: a(1) a d(2) a [a:3 d:1] then b e c b d c b e c each load,
//	             evicting the other one-use item (a keeps 3 uses): loads 3…11;
//	             a hits at the end → 11 loads
//	10.0.0.1 LRU: a(1) a a b(2) c(3, a) b c b c a(4, b) → 4 loads
//	10.0.0.1 LFU: a(1) a a [a:3] b(2) c(3, b) b(4, c) c(5) b(6) c(7) a hit → 7
//	10.0.0.2 LRU and LFU: d(1) e(2) d e → 2 loads
//	per-instance sums: LRU 4 + 2 = 6, LFU 7 + 2 = 9
//
// So LFU beats LRU on the shared cache and loses per instance.
func TestAnalyzeHandComputed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a.json")
	var stdout, stderr bytes.Buffer
	code := analyzeCommand(context.Background(), []string{
		filepath.Join("..", "..", "pkg", "replay", "testdata", "alibaba_t2i.json"),
		"--scene", "A", "--adapter-cache", "2", "--policy", "lru,lfu", "--json", out,
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var a struct {
		Requests, Accesses, Distinct int
		Key                          string
		InstanceKey                  string `json:"instance_key"`
		Overall                      []struct {
			Slots  int
			Policy string
			Loads  int64
			Hits   int64
		}
		InstancesTotal []struct {
			Policy string
			Loads  int64
		} `json:"instances_total"`
		Instances []struct {
			Instance string
			Requests int
			Runs     []struct {
				Policy string
				Loads  int64
			}
		}
	}
	data := testenv.ReadFile(t, out)
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Requests != 14 || a.Accesses != 14 || a.Distinct != 5 || a.Key != "adapters" || a.InstanceKey != "ip" {
		t.Fatalf("report %s", data)
	}
	loads := func(runs []struct {
		Policy string
		Loads  int64
	}) map[string]int64 {
		m := map[string]int64{}
		for _, r := range runs {
			m[r.Policy] = r.Loads
		}
		return m
	}
	overall := map[string]int64{}
	for _, r := range a.Overall {
		overall[r.Policy] = r.Loads
	}
	check := func(what string, got map[string]int64, lru, lfu int64) {
		if got["lru"] != lru || got["lfu"] != lfu {
			t.Errorf("%s: loads %v, want lru %d, lfu %d", what, got, lru, lfu)
		}
	}
	check("overall", overall, 12, 11)
	check("per-instance total", loads(a.InstancesTotal), 6, 9)
	if len(a.Instances) != 2 || a.Instances[0].Instance != "10.0.0.1" || a.Instances[1].Instance != "10.0.0.2" {
		t.Fatalf("instances %s", data)
	}
	check("10.0.0.1", loads(a.Instances[0].Runs), 4, 7)
	check("10.0.0.2", loads(a.Instances[1].Runs), 2, 2)
	for _, s := range []string{"One cache for the whole trace", "One cache per ip", "10.0.0.1", "lru/2", "5 distinct adapters"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, stdout.String())
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	lora := filepath.Join("..", "..", "pkg", "replay", "testdata", "alibaba_lora_head300.csv")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{lora, "--key", "adapters"}, exitUsage, "counts each request's LoRAs without naming them"},
		{[]string{lora, "--adapter-cache", "0"}, exitUsage, "--adapter-cache"},
		{[]string{lora, "--policy", "fifo"}, exitUsage, "want lru, lfu or opt"},
		{[]string{}, exitUsage, "want exactly one trace file"},
		{[]string{lora, "--adapter-cache", "4,16", "--policy", "opt", "--top", "3"}, exitOK, "One cache per groupId (37 instances"},
	} {
		var stdout, stderr bytes.Buffer
		code := analyzeCommand(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String()+stderr.String(), c.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.want, stdout.String(), stderr.String())
		}
	}
}
