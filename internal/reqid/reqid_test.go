package reqid

import "testing"

func TestPlain(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "run7-42": true, "a_b.c:D-9": true,
		"a b": false, "a\r\nX: y": false, `a"b`: false, "é": false, "a/b": false,
	} {
		if got := Plain(s); got != want {
			t.Errorf("Plain(%q) = %v, want %v", s, got, want)
		}
	}
}
