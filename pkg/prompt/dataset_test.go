package prompt

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDatasetErrorsNameLineElementAndField(t *testing.T) {
	good := "  {\"conversations\": [{\"from\": \"human\", \"value\": \"hello there\"}, {\"from\": \"gpt\", \"value\": \"hi\"}]}"
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"wrong type", "[\n" + good + ",\n  {\"conversations\": [\n    {\"value\": 42}\n  ]}\n]", []string{"line 4:", "element [1]", "conversations.value", "want a string", "number"}},
		{"syntax", "[\n" + good + ",\n" + good + ",\n  {\"conversations\":\n   [x]}\n]", []string{"line 5:", "element [2]", "invalid character 'x'"}},
		{"cut short", "[\n" + good + ",\n" + good, []string{"line 3:", "ends early"}},
		{"cut in an element", "[\n" + good + ",\n {\"conversations\": [", []string{"line 3:", "element [1]", "ends early"}},
		{"not an array", "\n\n{\"a\": 1}", []string{"want a JSON array"}},
		{"empty", "", []string{"line 1:", "ends early"}},
		{"output_length", "[\n{\"input_text\": \"a b\", \"output_length\": 1.5}]", []string{"line 2:", "output_length", "integer"}},
		{"garbage after an element", "[\n" + good + "\n}", []string{"line 3:", "after element [0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := "sharegpt"
			if strings.Contains(tc.data, "input_text") {
				kind = "sharegpt_pre"
			}
			_, err := ReadDataset(strings.NewReader(tc.data), kind, 0)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("the file name", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sg.json")
		os.WriteFile(path, []byte("[\n{\"conversations\": 5}]"), 0o644)
		_, err := LoadDataset(path, "sharegpt", 0)
		if err == nil || !strings.Contains(err.Error(), path+": line 2: element [0]: conversations") {
			t.Errorf("error %v, want the path, line 2, element [0] and the field", err)
		}
	})
}

func TestDatasetLongFileLineNumbers(t *testing.T) {
	// Far past the decoder's first buffer, the line is still right.
	var b strings.Builder
	b.WriteString("[\n")
	for range 5000 {
		b.WriteString("{\"conversations\": [{\"value\": \"a b c\"},\n  {\"value\": \"d e\"}]},\n")
	}
	b.WriteString("{\"conversations\": [{\"value\": true}]}\n]")
	_, err := ReadDataset(strings.NewReader(b.String()), "sharegpt", 0)
	if err == nil || !strings.Contains(err.Error(), "line 10002:") || !strings.Contains(err.Error(), "element [5000]") {
		t.Errorf("error %v, want line 10002, element [5000]", err)
	}
	d, err := ReadDataset(strings.NewReader(b.String()), "sharegpt", 10)
	if err != nil || d.Len() != 10 {
		t.Errorf("with a limit the bad element is never read: %v, %v", d, err)
	}
}

// FuzzReadDataset: the loader never panics; what it accepts has one
// output per prompt, and writing the prompts back gives the same dataset.
func FuzzReadDataset(f *testing.F) {
	for _, s := range []string{
		`[{"conversations":[{"from":"human","value":"a b"},{"from":"gpt","value":"c d e"}]}]`,
		`[{"conversation":[{"value":"x"},{"value":""}]},{"conversations":[]}]`,
		`[{"input_text":"one two three","output_length":7},{"input_text":"  "}]`,
		"[\n{\"conversations\": [{\"value\": 1}]}\n]",
		`[`, `{}`, `[1, "a", null]`, `[{"conversations":null}]`, `[{}] trailing`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, pre bool) {
		kind := "sharegpt"
		if pre {
			kind = "sharegpt_pre"
		}
		d, err := ReadDataset(strings.NewReader(string(data)), kind, 0)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.HasPrefix(err.Error(), "no usable prompts") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		if d.Len() == 0 || len(d.Outputs) != d.Len() {
			t.Fatalf("%d prompts, %d outputs", d.Len(), len(d.Outputs))
		}
		type turn struct {
			Value string `json:"value"`
		}
		type entry struct {
			Conversations []turn `json:"conversations,omitempty"`
			InputText     string `json:"input_text,omitempty"`
			OutputLength  *int   `json:"output_length,omitempty"`
		}
		var back []entry
		for i, p := range d.Prompts {
			if pre {
				back = append(back, entry{InputText: p, OutputLength: &d.Outputs[i]})
			} else {
				back = append(back, entry{Conversations: []turn{{p}, {strings.Repeat("w ", d.Outputs[i])}}})
			}
		}
		raw, _ := json.Marshal(back)
		d2, err := ReadDataset(strings.NewReader(string(raw)), kind, 0)
		if err != nil {
			t.Fatalf("written back, the dataset does not load: %v", err)
		}
		for i := range d.Prompts {
			if d2.Prompts[i] != d.Prompts[i] || d2.Outputs[i] != d.Outputs[i] {
				t.Fatalf("entry %d: %q/%d, then %q/%d", i, d.Prompts[i], d.Outputs[i], d2.Prompts[i], d2.Outputs[i])
			}
		}
	})
}

func TestDatasetNegativeIndexWraps(t *testing.T) {
	// The warm-up sends arrivals with negative indexes; they pick a prompt
	// like any other index, counting back from the end.
	d := &Dataset{Prompts: []string{"a b", "c d", "e f"}}
	for _, tc := range []struct {
		i    int64
		want string
	}{{-1, "e f"}, {-3, "a b"}, {-4, "e f"}, {4, "c d"}} {
		if got := string(d.appendText(nil, tc.i, 2)); got != tc.want {
			t.Errorf("index %d: %q, want %q", tc.i, got, tc.want)
		}
	}
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A giant element is an error naming it, read with bounded memory.
func TestDatasetElementIsBounded(t *testing.T) {
	const n = 256 << 20
	r := io.MultiReader(strings.NewReader(`[{"conversations": [{"value": "hi"}, {"value": "there"}]},`+"\n"+`{"conversations": [{"value": "`),
		io.LimitReader(repeatByte('x'), n), strings.NewReader(`"}, {"value": "y"}]}]`))
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	_, err := ReadDataset(r, "sharegpt", 0)
	runtime.ReadMemStats(&b)
	if err == nil || !strings.Contains(err.Error(), "element [1]") || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("error %v", err)
	}
	if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 200<<20 { // the element is read and decoded once more to place the error: a few times the 16 MiB limit, not the 256 MiB element
		t.Errorf("reading a %d MiB element allocated %d MiB", n>>20, alloc>>20)
	}
}

// The prompt text kept from a file is bounded too.
func TestDatasetTextIsBounded(t *testing.T) {
	defer func(m int) { maxDatasetText = m }(maxDatasetText)
	maxDatasetText = 1000
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 30 {
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, `{"conversations": [{"value": "%s"}, {"value": "y"}]}`, strings.Repeat("w ", 25))
	}
	sb.WriteString("]")
	_, err := ReadDataset(strings.NewReader(sb.String()), "sharegpt", 0)
	if err == nil || !strings.Contains(err.Error(), "line 21: element [20]: the prompts kept so far exceed") {
		t.Fatalf("error %v", err)
	}
	if _, err := ReadDataset(strings.NewReader(sb.String()), "sharegpt", 20); err != nil {
		t.Fatalf("20 prompts: %v", err)
	}
}
