package prefix

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestEachRecord: a document is one record, JSON Lines one a line (blank
// lines counted, not given), a line over the limit given as tooLong.
func TestEachRecord(t *testing.T) {
	long := `{"hash_ids":[` + strings.Repeat("1,", 40000) + `1]}` // a first line past the 64 KiB peek
	for _, c := range []struct {
		name, in string
		max      int
		want     []string
	}{
		{"lines", "{\"a\":1}\n\n  {\"b\":2}  \r\n{\"c\":3}", 100, []string{`1 {"a":1}`, `3 {"b":2}`, `4 {"c":3}`}},
		{"document", "{\n  \"requests\": []\n}\n", 100, []string{"1 {\n  \"requests\": []\n}\n"}},
		{"document after a byte-order mark", "\ufeff{\n\"requests\": []}", 100, []string{"1 \ufeff{\n\"requests\": []}"}},
		{"a long first line", long + "\n{}\n", 1 << 20, []string{"1 " + long, "2 {}"}},
		{"too long", "{}\n{\"xxxxxxxx\":1}\n{}\n", 10, []string{"1 {}", "2 too long", "3 {}"}},
	} {
		var got []string
		err := EachRecord(strings.NewReader(c.in), c.max, func(line int, b []byte, tooLong bool) error {
			if tooLong {
				got = append(got, fmt.Sprintf("%d too long", line))
			} else {
				got = append(got, fmt.Sprintf("%d %s", line, b))
			}
			return nil
		})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %.80q, %v; want %.80q", c.name, got, err, c.want)
		}
	}
}
