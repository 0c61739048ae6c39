package prompt

import (
	"math"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// TestSharedPrefixPrompts checks --prefix-len: two requests with the same
// prefix share exactly min(N, their lengths) leading tokens, requests with
// other prefixes share none, the length stays the request's target (token
// ids exact), a request shorter than N gets the prefix cut to its length,
// and Mooncake prefix blocks take precedence.
func TestSharedPrefixPrompts(t *testing.T) {
	sp, err := NewSharedPrefix(300, 4, "uniform", 11)
	if err != nil {
		t.Fatal(err)
	}
	ds := &Dataset{Prompts: []string{"alpha beta gamma delta", "one two three"}}
	for _, o := range []Options{
		{Format: TokenIDs, Salt: 5, Prefix: sp},
		{Format: Text, Salt: 5, Prefix: sp},
		{Chat: true, Salt: 5, Prefix: sp},
		{Format: Text, Salt: 5, Prefix: sp, Dataset: ds},
	} {
		b := New(o)
		// Find requests by prefix.
		byPrefix := map[int][]int64{}
		for i := int64(0); len(byPrefix) < 4 || len(byPrefix[0]) < 3; i++ {
			byPrefix[sp.Pick(i)] = append(byPrefix[sp.Pick(i)], i)
		}
		same := byPrefix[0]
		a := units(t, b, arrival.Arrival{Index: same[0], InputTokens: 1000})
		if len(a) != 1000 {
			t.Fatalf("%+v: %d tokens, want 1000", o.Format, len(a))
		}
		if n := common(a, units(t, b, arrival.Arrival{Index: same[1], InputTokens: 800})); n != 300 {
			t.Errorf("dataset %v format %d: same prefix shares %d tokens, want 300", o.Dataset != nil, b.Format(), n)
		}
		short := units(t, b, arrival.Arrival{Index: same[2], InputTokens: 120})
		if len(short) != 120 || common(a, short) != 120 {
			t.Errorf("format %d: a 120-token request shares %d of %d tokens with its prefix, want all", b.Format(), common(a, short), len(short))
		}
		for k := 1; k < 4; k++ {
			if n := common(a, units(t, b, arrival.Arrival{Index: byPrefix[k][0], InputTokens: 1000})); n > 1 {
				t.Errorf("format %d: prefix %d shares %d tokens with prefix 0", b.Format(), k, n)
			}
		}
		blocks := units(t, b, arrival.Arrival{Index: same[1], InputTokens: 1000, PrefixBlocks: []uint64{3}})
		if common(a, blocks) > 1 {
			t.Errorf("format %d: a request with prefix blocks got the shared prefix", b.Format())
		}
	}
	// Without --prefix-len, requests share nothing.
	b := New(Options{Format: TokenIDs, Salt: 5})
	if n := common(units(t, b, arrival.Arrival{Index: 0, InputTokens: 500}), units(t, b, arrival.Arrival{Index: 4, InputTokens: 500})); n > 1 {
		t.Errorf("no shared prefix: two requests share %d tokens", n)
	}
}

// TestSharedPrefixPick checks the prefix distribution: uniform and Zipf
// shares within 4 standard errors over 50,000 requests.
func TestSharedPrefixPick(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf:1.2"} {
		sp, err := NewSharedPrefix(10, 8, dist, 3)
		if err != nil {
			t.Fatal(err)
		}
		const n = 50000
		counts := make([]float64, sp.Num)
		for i := range int64(n) {
			counts[sp.Pick(i)]++
		}
		for k, c := range counts {
			p := sp.Share(k)
			if se := math.Sqrt(n * p * (1 - p)); math.Abs(c-n*p) > 4*se {
				t.Errorf("%s: prefix %d picked %g times, want %.0f ± %.0f", dist, k, c, n*p, 4*se)
			}
		}
	}
	if z, _ := NewSharedPrefix(10, 8, "zipf:1.2", 3); !(z.Share(0) > 2*z.Share(1)) {
		t.Errorf("zipf:1.2: prefix 0 share %g should be > 2× prefix 1's %g", z.Share(0), z.Share(1))
	}
}

func TestSharedPrefixErrors(t *testing.T) {
	for _, c := range []struct {
		n, k int
		dist string
		want string
	}{
		{0, 4, "uniform", "prefix length 0"},
		{10, 0, "uniform", "number of prefixes 0"},
		{10, MaxPrefixes + 1, "uniform", "number of prefixes"},
		{10, 4, "zipf", `"zipf": want uniform or zipf:S`},
		{10, 4, "zipf:x", `the Zipf exponent "x" is not a number`},
		{10, 4, "zipf:-1", "must be in (0, 100]"},
		{10, 4, "normal", "want uniform or zipf:S"},
	} {
		_, err := NewSharedPrefix(c.n, c.k, c.dist, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSharedPrefix(%d, %d, %q) = %v, want %q", c.n, c.k, c.dist, err, c.want)
		}
	}
}
