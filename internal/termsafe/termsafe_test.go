package termsafe

import (
	"errors"
	"fmt"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"mock-model", "mock-model"},
		{"Qwen/Qwen2.5-7B-Instruct\tα β 模型", "Qwen/Qwen2.5-7B-Instruct\tα β 模型"},
		{"evil\x1b]0;pwned\x07\x1b[2Jmodel", `evil\x1b]0;pwned\a\x1b[2Jmodel`},
		{"bad request\nFAKE TABLE LINE\r", `bad request\nFAKE TABLE LINE\r`},
		{"csi\u009b2J del\x7f nul\x00", `csi\x9b2J del\x7f nul\x00`},
		{"raw \x9b byte", `raw \x9b byte`},
		{"rtl \u202egnp.exe", `rtl \u202egnp.exe`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLines(t *testing.T) {
	if got, want := Lines("2 problems:\n  model evil\x1b[2J\n  b"), "2 problems:\n  model evil\\x1b[2J\n  b"; got != want {
		t.Errorf("Lines: %q, want %q", got, want)
	}
}

func TestArgs(t *testing.T) {
	stack := []byte("goroutine 1\n\tmain.go:1")
	a := []any{"ok", errors.New("boom\x1b[2J"), 42, stack}
	got := fmt.Sprintf("%s %v %d\n%s", Args(a)...)
	if want := "ok boom\\x1b[2J 42\ngoroutine 1\n\tmain.go:1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if a[1].(error).Error() != "boom\x1b[2J" {
		t.Error("Args changed its argument")
	}
}

func BenchmarkStringClean(b *testing.B) {
	for range b.N {
		String("400 Bad Request: the prompt is too long for the model's context")
	}
}
