package prompt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// decode reads raw, JSON, as a T: a prompt's ids ([]int) or text
// (string), a content's parts.
func decode[T any](t testing.TB, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%.200s… is not JSON of a %T: %v", raw, v, err)
	}
	return v
}

func TestTokenIDPromptsHaveExactLength(t *testing.T) {
	b := New(Options{Format: TokenIDs, Salt: 1})
	for _, n := range []int{1, 2, 3, 4, 17, 1024, poolUnits - 1, poolUnits, poolUnits + 5, 70000} {
		a := arrival.Arrival{Index: int64(n), InputTokens: n}
		v := decode[[]int](t, b.Append(nil, &a))
		if len(v) != n {
			t.Errorf("target %d tokens: got %d", n, len(v))
		}
		for _, id := range v {
			if id < idLow || id >= idLow+idRange {
				t.Fatalf("token id %d outside [%d, %d)", id, idLow, idLow+idRange)
			}
		}
	}
	zero := arrival.Arrival{InputTokens: 0}
	if v := decode[[]int](t, b.Append(nil, &zero)); len(v) != 1 {
		t.Errorf("a zero-length target gave %d tokens, want 1", len(v))
	}
}

func TestPromptsDifferFromTheFirstToken(t *testing.T) {
	for _, f := range []Format{TokenIDs, Text} {
		b := New(Options{Format: f, Salt: 7})
		seen := map[string]int64{}
		for i := range int64(20000) {
			a := arrival.Arrival{Index: i, InputTokens: 16}
			p := b.Append(nil, &a)
			// A prefix cache shares whole blocks (16 tokens in vLLM): two
			// requests whose first 16 units agree would share a block.
			var head string
			if f == TokenIDs {
				head = strings.Join(strings.Split(strings.Trim(string(p), "[]"), ",")[:16], ",")
			} else {
				head = strings.Join(strings.Fields(decode[string](t, p))[:16], " ")
			}
			if j, dup := seen[head]; dup {
				t.Fatalf("format %d: requests %d and %d start alike (%s)", f, j, i, head)
			}
			seen[head] = i
		}
	}
}

func TestSaltChangesEveryPrompt(t *testing.T) {
	a := arrival.Arrival{Index: 5, InputTokens: 32}
	p1 := New(Options{Salt: 1}).Append(nil, &a)
	p2 := New(Options{Salt: 2}).Append(nil, &a)
	p1b := New(Options{Salt: 1}).Append(nil, &a)
	if string(p1) == string(p2) || string(p1) != string(p1b) {
		t.Error("the salt must change prompts and the same salt must repeat them")
	}
}

func TestPrefixBlocksAreSharedByID(t *testing.T) {
	for _, f := range []Format{TokenIDs, Text} {
		b := New(Options{Format: f, Salt: 3})
		units := func(a arrival.Arrival) []string {
			p := b.Append(nil, &a)
			if f == TokenIDs {
				return strings.Split(strings.Trim(string(p), "[]"), ",")
			}
			return strings.Fields(decode[string](t, p))
		}
		x := units(arrival.Arrival{Index: 1, InputTokens: 3*BlockTokens + 100, PrefixBlocks: []uint64{10, 11, 12, 13}})
		y := units(arrival.Arrival{Index: 2, InputTokens: 2*BlockTokens + 7, PrefixBlocks: []uint64{10, 11, 99}})
		if len(x) != 3*BlockTokens+100 || len(y) != 2*BlockTokens+7 {
			t.Fatalf("lengths %d and %d", len(x), len(y))
		}
		same := func(i int) bool { return x[i] == y[i] }
		for i := range 2 * BlockTokens {
			if !same(i) {
				t.Fatalf("format %d: unit %d differs although blocks 10 and 11 are shared", f, i)
			}
		}
		if same(2 * BlockTokens) {
			t.Errorf("format %d: block 3 (ids 12 vs 99) starts alike", f)
		}
	}
}

func TestTextPromptsHaveExactWordCount(t *testing.T) {
	b := New(Options{Chat: true, Salt: 1, Suffix: `Answer "now"`})
	for _, n := range []int{1, 5, 500, 40000} {
		a := arrival.Arrival{Index: 9, InputTokens: n}
		s := decode[string](t, b.Append(nil, &a))
		if got := CountWords(s); got != n+2 {
			t.Errorf("target %d words + 2-word suffix: got %d", n, got)
		}
		if !strings.HasSuffix(s, `Answer "now"`) {
			t.Errorf("suffix missing: …%s", s[max(0, len(s)-20):])
		}
	}
}

func TestDatasetPromptsAreTrimmedOrRepeated(t *testing.T) {
	ds, err := ReadDataset(strings.NewReader(`[
		{"conversations":[{"from":"human","value":"one two three"},{"from":"gpt","value":"a b c d e"}]},
		{"conversations":[{"from":"human","value":"only one turn"}]},
		{"conversation":[{"value":"x \"y\" z\nw"},{"value":"r"}]}
	]`), "sharegpt", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 2 || ds.Skipped != 1 {
		t.Fatalf("len %d skipped %d, want 2 and 1", ds.Len(), ds.Skipped)
	}
	if l := ds.Lengths(0); l[0] != [2]int{3, 5} || l[1] != [2]int{4, 1} {
		t.Errorf("lengths %v", l)
	}
	b := New(Options{Dataset: ds, Salt: 1})
	if b.Format() != Text {
		t.Fatal("a dataset must send text")
	}
	for _, tc := range []struct {
		index int64
		n     int
		want  string
	}{
		{0, 2, "one two"},
		{0, 7, "one two three one two three one"},
		{1, 4, `x "y" z w`},
		{2, 3, "one two three"}, // index 2 cycles to prompt 0
	} {
		a := arrival.Arrival{Index: tc.index, InputTokens: tc.n}
		if got := decode[string](t, b.Append(nil, &a)); got != tc.want {
			t.Errorf("prompt %d × %d words = %q, want %q", tc.index, tc.n, got, tc.want)
		}
	}
	if _, err := ReadDataset(strings.NewReader(`[{"input_text":"hello world","output_length":12},{"input_text":""}]`), "sharegpt_pre", 0); err != nil {
		t.Errorf("sharegpt_pre: %v", err)
	}
	if _, err := ReadDataset(strings.NewReader(`{"not":"a list"}`), "sharegpt", 0); err == nil {
		t.Error("a JSON object was accepted as a dataset")
	}
}

func BenchmarkTokenIDPrompt1024(b *testing.B) {
	p := New(Options{Salt: 1})
	a := arrival.Arrival{InputTokens: 1024}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Index = int64(i)
		buf = p.Append(buf[:0], &a)
	}
}
