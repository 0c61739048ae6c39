package jsonscan

import "testing"

// Step marks the bytes of strings, quotes and escapes included, and the
// quote that ends each; brackets and quotes inside a string are its own.
func TestStep(t *testing.T) {
	text := `{"a[":"x\"}\\",[1]}`
	want := "0111101111111100000" // 1: inside a string
	ends := "0000100000000100000" // 1: the quote that ends one
	var s Strings
	for i := 0; i < len(text); i++ {
		in, closed := s.Step(text[i])
		if (in != (want[i] == '1')) || (closed != (ends[i] == '1')) {
			t.Errorf("byte %d %q: in %v closed %v, want %c %c", i, text[i], in, closed, want[i], ends[i])
		}
	}
	if s.In() {
		t.Error("ends inside a string")
	}
	var open Strings
	for _, c := range []byte(`"abc`) {
		open.Step(c)
	}
	if !open.In() {
		t.Error("an unclosed string: In is false")
	}
}
