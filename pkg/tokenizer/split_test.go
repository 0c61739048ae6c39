package tokenizer

import (
	"fmt"
	"testing"

	"github.com/dlclark/regexp2"
)

// The hand-written splitters match what regexp2 matches with the
// patterns themselves (the slow, exact oracle).
func FuzzSplitters(f *testing.F) {
	for _, s := range []string{
		"Hello, world! It's 12345 o'clock... DON'T\r\n\r\n  x  \ty\n",
		"  leading and trailing  ", "a\u00a0b\u3000c", "'s'S'll'LL'Re 're", "é\xff\xfe日本語テキスト123４５",
		"x\n \n y", "\n\n\n", " !!! ?? ", "a  ", " ", "", "--==>> \r\n", "'", "1,234,567.89",
	} {
		f.Add(s)
	}
	oracles := map[string]*regexp2.Regexp{}
	for p := range splitters {
		oracles[p] = regexp2.MustCompile(p, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 256 {
			return // the oracle backtracks in cubic time over long runs of spaces
		}
		for p, split := range splitters {
			got, want := split(s), regexMatches(oracles[p], s)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pattern %.30q on %q:\n got %v\nwant %v", p, s, got, want)
			}
		}
	})
}

func TestSplittersKnowTheirPatterns(t *testing.T) {
	if len(splitters) != 3 || splitters[llama3Pattern] == nil || splitters[qwen2Pattern] == nil || splitters[gpt2Pattern] == nil {
		t.Fatal("a pattern without its splitter")
	}
}
