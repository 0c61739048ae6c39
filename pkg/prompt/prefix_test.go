package prompt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// units splits a built prompt into its tokens (ids or words).
func units(t *testing.T, b *Builder, a arrival.Arrival) []string {
	t.Helper()
	raw := b.Append(nil, &a)
	if b.Format() == TokenIDs {
		ids := decode[[]json.Number](t, raw)
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = id.String()
		}
		return out
	}
	return strings.Fields(decode[string](t, raw))
}

func common(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestPrefixBlocks checks Mooncake's semantics: equal hash ids give equal
// 512-token blocks, different ids different ones, a short last block is
// the start of its id's block, and tokens beyond the blocks are the
// request's own.
func TestPrefixBlocks(t *testing.T) {
	for _, f := range []Format{TokenIDs, Text} {
		b := New(Options{Format: f, Salt: 42})
		full := units(t, b, arrival.Arrival{Index: 1, InputTokens: 1024, PrefixBlocks: []uint64{7, 8}})
		for _, c := range []struct {
			name   string
			a      arrival.Arrival
			common int
		}{
			{"same ids, other request", arrival.Arrival{Index: 2, InputTokens: 1024, PrefixBlocks: []uint64{7, 8}}, 1024},
			{"second block differs", arrival.Arrival{Index: 3, InputTokens: 1024, PrefixBlocks: []uint64{7, 9}}, 512},
			{"short last block", arrival.Arrival{Index: 4, InputTokens: 600, PrefixBlocks: []uint64{7, 8}}, 600},
			{"tokens beyond the blocks", arrival.Arrival{Index: 5, InputTokens: 800, PrefixBlocks: []uint64{7}}, 512},
			{"more ids than tokens", arrival.Arrival{Index: 6, InputTokens: 300, PrefixBlocks: []uint64{7, 8, 9}}, 300},
			{"first block differs", arrival.Arrival{Index: 7, InputTokens: 1024, PrefixBlocks: []uint64{8, 7}}, 0},
			{"no blocks", arrival.Arrival{Index: 1, InputTokens: 1024}, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				u := units(t, b, c.a)
				if len(u) != c.a.InputTokens {
					t.Fatalf("%d tokens, want %d", len(u), c.a.InputTokens)
				}
				if n := common(full, u); n != c.common {
					t.Errorf("format %d: shares %d tokens with the reference, want %d", f, n, c.common)
				}
			})
		}
		other := New(Options{Format: f, Salt: 43})
		if n := common(full, units(t, other, arrival.Arrival{Index: 1, InputTokens: 1024, PrefixBlocks: []uint64{7, 8}})); n != 0 {
			t.Errorf("another salt shares %d tokens", n)
		}
	}
}

// FuzzParseImageSize round-trips WxH and never accepts a size out of range.
func FuzzParseImageSize(f *testing.F) {
	for _, s := range []string{"512x512", " 64 X 48 ", "0x1", "8192x8192", "8193x1", "1x", "x", "-1x5", "3x4x5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, h, err := ParseImageSize(s)
		if err != nil {
			if !strings.Contains(err.Error(), "WxH") {
				t.Fatalf("error %q does not say what is wanted", err)
			}
			return
		}
		if w < 1 || h < 1 || w > MaxImageSide || h > MaxImageSide {
			t.Fatalf("ParseImageSize(%q) = %d, %d", s, w, h)
		}
		w2, h2, err := ParseImageSize(strings.ToUpper(strings.Join([]string{itoa(w), itoa(h)}, "x")))
		if err != nil || w2 != w || h2 != h {
			t.Fatalf("round trip of %dx%d: %d, %d, %v", w, h, w2, h2, err)
		}
	})
}

func itoa(v int) string { b, _ := json.Marshal(v); return string(b) }
