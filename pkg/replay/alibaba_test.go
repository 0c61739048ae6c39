package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// loraOracle reads a GenTD26 CSV independently: the rows that succeeded
// and have every field, in file order (the files are in time order).
type loraRow struct {
	at                   time.Time
	in, images, steps, k int
	neg                  int
	model, group, status string
}

func readLoRAOracle(t *testing.T, path string) (rows []loraRow, failed, unusable int) {
	t.Helper()
	col, recs := testenv.ReadCSV(t, path)
	num := func(s string) (int, bool) {
		v, err := strconv.ParseFloat(s, 64)
		return int(v), err == nil
	}
	for _, r := range recs {
		at, err := time.Parse(time.DateTime, r[col["gmt_create"]])
		in, ok1 := num(r[col["prompt_length"]])
		im, ok2 := num(r[col["num_images_per_prompt"]])
		st, ok3 := num(r[col["num_inference_steps"]])
		k, ok4 := num(r[col["num_lora"]])
		neg, _ := num(r[col["negative_prompt_length"]])
		if err != nil || !ok1 || !ok2 || !ok3 || !ok4 || r[col["checkpoint_model_version_id"]] == "" {
			unusable++
			continue
		}
		if r[col["predict_status"]] != "SUCCEED" {
			failed++
			continue
		}
		rows = append(rows, loraRow{at: at, in: max(in, 1), images: im, steps: st, k: k, neg: neg,
			model: r[col["checkpoint_model_version_id"]], group: r[col["groupId"]], status: r[col["predict_status"]]})
	}
	return rows, failed, unusable
}

func TestAlibabaLoRA(t *testing.T) {
	for _, c := range []struct {
		file                             string
		usable, failed, unusable, zeroIn int
		skippedLines                     []int
		tasks                            map[string]int
	}{
		{file: "alibaba_lora_head300.csv", usable: 295, failed: 5, tasks: map[string]int{"TXT_2_IMG": 212, "IMG_2_IMG": 58, "INPAINTING": 25}},
		// Real rows around the trace's first unfinished requests: three
		// PENDING rows with empty fields (lines 12–14) and two FAILED rows.
		{file: "alibaba_lora_unfinished.csv", usable: 15, failed: 2, unusable: 3, skippedLines: []int{12, 13, 14},
			tasks: map[string]int{"TXT_2_IMG": 14, "IMG_2_IMG": 1}},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			tr, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr)
			want, failed, unusable := readLoRAOracle(t, path)
			if len(want) != c.usable || failed != c.failed || unusable != c.unusable {
				t.Fatalf("oracle: %d usable, %d failed, %d unusable; the test expects %d, %d, %d", len(want), failed, unusable, c.usable, c.failed, c.unusable)
			}
			if tr.Format != AlibabaLoRA || tr.Len() != c.usable || tr.Skipped.Failed != c.failed || tr.Skipped.Rows != c.unusable {
				t.Fatalf("%s: %d usable, %d failed, %d skipped", tr.Format, tr.Len(), tr.Skipped.Failed, tr.Skipped.Rows)
			}
			if !slices.Equal(tr.Skipped.Lines, c.skippedLines) {
				t.Errorf("skipped lines %v, want %v", tr.Skipped.Lines, c.skippedLines)
			}
			if c.unusable > 0 && tr.Skipped.First != "line 12: prompt_length: empty" {
				t.Errorf("first problem %q", tr.Skipped.First)
			}
			if !tr.HasInput || tr.HasOutput || !tr.HasGenerations() || !tr.HasModels() || !tr.HasInstances() || tr.HasAdapterNames() {
				t.Fatalf("columns: in %v out %v gen %v models %v instances %v named adapters %v", tr.HasInput, tr.HasOutput, tr.HasGenerations(), tr.HasModels(), tr.HasInstances(), tr.HasAdapterNames())
			}
			if len(tr.Tasks) != len(c.tasks) {
				t.Errorf("tasks %v, want %v", tr.Tasks, c.tasks)
			}
			for k, v := range c.tasks {
				if tr.Tasks[k] != v {
					t.Errorf("tasks %v, want %v", tr.Tasks, c.tasks)
				}
			}
			for i, w := range want {
				g := tr.Generation(i)
				at := w.at.Sub(want[0].at)
				var loras []string
				for j := range w.k {
					loras = append(loras, "lora-"+strconv.Itoa(j+1))
				}
				if tr.At(i) != at || tr.InputTokens(i) != w.in || tr.Model(i) != w.model || tr.Instances()[tr.InstanceID(i)] != w.group ||
					g.Images != w.images || g.Steps != w.steps || g.NegativeTokens != w.neg || !slices.Equal(g.LoRAs, loras) || g.ControlNets != nil {
					t.Fatalf("row %d: at %v in %d model %s group %s gen %+v; want %+v", i, tr.At(i), tr.InputTokens(i), tr.Model(i), tr.Instances()[tr.InstanceID(i)], *g, w)
				}
			}
			kept, err := Load(path, Options{KeepFailed: true})
			if err != nil || kept.Len() != c.usable+c.failed || kept.Skipped.Failed != 0 {
				t.Fatalf("--keep-failed: %v, %d rows", err, kept.Len())
			}
			_, err = Load(path, Options{Strict: true})
			var re *RowError
			if c.unusable > 0 && (!errors.As(err, &re) || re.Line != 12 || re.Field != "prompt_length") {
				t.Fatalf("strict: %v", err)
			}
		})
	}
}

func TestAlibabaLoRABadRows(t *testing.T) {
	tr, err := Load("testdata/alibaba_lora_bad.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr)
	if tr.Len() != 2 || tr.Skipped.Rows != 8 || !slices.Equal(tr.Skipped.Lines, []int{3, 4, 5, 6, 7, 8, 10, 11}) || tr.Skipped.ZeroInput != 1 {
		t.Fatalf("%d usable, skipped %+v", tr.Len(), tr.Skipped)
	}
	if g := tr.Generation(1); g.Images != 2 || g.Steps != 25 || g.NegativeTokens != 0 || len(g.LoRAs) != 2 || tr.InputTokens(1) != 1 {
		t.Fatalf("row 1: %+v, input %d", *g, tr.InputTokens(1))
	}
	// Strict mode names the line and field of each kind of problem.
	want := map[int]string{
		3:  "num_images_per_prompt: want at least 1 image",
		4:  `prompt_length: not a number: "sixty"`,
		5:  "num_inference_steps: negative",
		6:  "checkpoint_model_version_id: empty",
		7:  "gmt_create: not a date and time",
		8:  `num_lora: not a number: "x"`,
		10: "prompt_length: missing",
		11: "num_images_per_prompt: out of range",
	}
	data, _ := os.ReadFile("testdata/alibaba_lora_bad.csv")
	lines := strings.SplitAfter(string(data), "\n")
	for line, msg := range want {
		one := lines[0] + lines[line-1]
		_, err := Read(strings.NewReader(one), "bad.csv", Options{Strict: true})
		var re *RowError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "line 2: "+msg) {
			t.Errorf("line %d: %v, want %q", line, err, msg)
		}
	}
	if _, err := Read(strings.NewReader("gmt_create,num_images_per_prompt,num_inference_steps,checkpoint_model_version_id\n"), "h.csv", Options{}); err == nil ||
		!strings.Contains(err.Error(), `line 1: alibaba-lora format: no column "prompt_length"`) {
		t.Errorf("header without prompt_length: %v", err)
	}
}

// t2iWant is the fixture alibaba_t2i.json in time order: scene A's 14
// requests (one listed out of order) and scene B's 2; two bad rows.
var t2iSceneA = []struct {
	at          time.Duration
	ip, model   string
	loras, cnet []string
}{
	{0, "10.0.0.1", "sd15", []string{"a"}, nil},
	{500 * time.Millisecond, "10.0.0.1", "sd15", []string{"a"}, nil},
	{1000 * time.Millisecond, "10.0.0.2", "sdxl", []string{"d"}, []string{"canny"}},
	{1500 * time.Millisecond, "10.0.0.1", "sd15", []string{"a"}, nil},
	{2000 * time.Millisecond, "10.0.0.1", "sd15", []string{"b"}, nil},
	{2500 * time.Millisecond, "10.0.0.2", "sdxl", []string{"e"}, nil},
	{3000 * time.Millisecond, "10.0.0.1", "sd15", []string{"c"}, nil},
	{3500 * time.Millisecond, "10.0.0.1", "sd15", []string{"b"}, nil},
	{4000 * time.Millisecond, "10.0.0.2", "sdxl", []string{"d"}, []string{"canny"}},
	{4500 * time.Millisecond, "10.0.0.1", "sd15", []string{"c"}, nil},
	{5000 * time.Millisecond, "10.0.0.1", "sd15", []string{"b"}, nil},
	{5500 * time.Millisecond, "10.0.0.2", "sdxl", []string{"e"}, nil},
	{6000 * time.Millisecond, "10.0.0.1", "sd15", []string{"c"}, nil},
	{7000 * time.Millisecond, "10.0.0.1", "sd15", []string{"a"}, nil},
}

func TestAlibabaT2I(t *testing.T) {
	data, err := os.ReadFile("testdata/alibaba_t2i.json")
	if err != nil {
		t.Fatal(err)
	}
	// The same objects as JSON Lines.
	var objs []json.RawMessage
	if err := json.Unmarshal(data, &objs); err != nil {
		t.Fatal(err)
	}
	var jsonl bytes.Buffer
	for _, o := range objs {
		jsonl.Write(o)
		jsonl.WriteByte('\n')
	}
	for _, c := range []struct {
		name string
		data []byte
		file string
		// lines of the two bad rows
		bad []int
	}{
		{"array", data, "t2i.json", []int{18, 19}},
		{"json lines", jsonl.Bytes(), "t2i.jsonl", []int{17, 18}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Read(bytes.NewReader(c.data), c.file, Options{Scene: "A"})
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr)
			if tr.Format != AlibabaT2I || tr.Len() != len(t2iSceneA) || tr.Skipped.Scene != 2 || tr.Skipped.Rows != 2 || tr.Skipped.OutOfOrder != 1 {
				t.Fatalf("%s: %d rows, skipped %+v", tr.Format, tr.Len(), tr.Skipped)
			}
			if !slices.Equal(tr.Skipped.Lines, c.bad) || !strings.Contains(tr.Skipped.First, "timestamp: missing") {
				t.Errorf("skipped %+v, want lines %v (timestamp missing first)", tr.Skipped, c.bad)
			}
			if tr.HasInput || tr.HasOutput || !tr.HasAdapterNames() {
				t.Fatal("the trace gives no lengths and names its adapters")
			}
			for i, w := range t2iSceneA {
				g := tr.Generation(i)
				if tr.At(i) != w.at || tr.Model(i) != w.model || tr.Instances()[tr.InstanceID(i)] != w.ip ||
					g.Images != 1 || g.Steps != 0 || !slices.Equal(g.LoRAs, w.loras) || !slices.Equal(g.ControlNets, w.cnet) {
					t.Fatalf("row %d: %v %s %s %+v, want %+v", i, tr.At(i), tr.Model(i), tr.Instances()[tr.InstanceID(i)], *g, w)
				}
			}
			b, err := Read(bytes.NewReader(c.data), c.file, Options{Scene: "b"})
			if err != nil || b.Len() != 2 || b.Model(0) != "7" || !slices.Equal(b.Generation(0).LoRAs, []string{"a", "42"}) ||
				!slices.Equal(b.Generation(0).ControlNets, []string{"depth", "pose"}) || b.Generation(1).LoRAs != nil {
				t.Fatalf("scene B: %v %+v", err, b)
			}
			all, err := Read(bytes.NewReader(c.data), c.file, Options{})
			if err != nil || all.Len() != 16 || all.Skipped.Scene != 0 {
				t.Fatalf("every scene: %v, %d rows", err, all.Len())
			}
		})
	}
}

func TestJSONArrayErrors(t *testing.T) {
	row := `{"timestamp": 1, "base_model_id": "m", "loras": null}`
	for _, c := range []struct {
		name, data string
		rows       int
		err        string
	}{
		{"empty array", "[]", 0, "no usable row"},
		{"spaces", " [\n ] \n", 0, "no usable row"},
		{"brackets in strings", `[{"timestamp": 1, "base_model_id": "m]}\"[{", "loras": ["x,]"]}]`, 1, ""},
		{"two rows", "[" + row + ",\n" + row + "]", 2, ""},
		{"missing comma", "[" + row + "\n" + row + "]", 0, "line 2: want , or ] after an element"},
		{"unterminated", "[" + row + ",", 0, "unexpected end of file"},
		{"trailing data", "[" + row + "] x", 0, "data after the end of the JSON array"},
		{"other array", `[{"a": 1}]`, 0, "a JSON array is read only as the Alibaba text-to-image trace"},
		{"not objects", "[" + row + ", 3, \"x\", [1]]", 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(c.data), "x.json", Options{})
			if testenv.WantErr(t, err, c.err) {
				return
			}
			if tr.Len() != c.rows {
				t.Fatalf("%d rows, want %d", tr.Len(), c.rows)
			}
		})
	}
	tr, _ := Read(strings.NewReader("["+row+", 3, \"x\"]"), "x.json", Options{})
	if tr.Skipped.Rows != 2 || tr.Skipped.First != "line 1: not a JSON object" {
		t.Errorf("non-objects: %+v", tr.Skipped)
	}
}

// TestAlibabaSchedule: a replayed image trace carries what to generate.
func TestAlibabaSchedule(t *testing.T) {
	tr, err := Load("testdata/alibaba_lora_head300.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := tr.Resolve(Plan{TimeScale: 3600})
	if err != nil {
		t.Fatal(err)
	}
	var first []arrival.Arrival
	for a := range tr.Schedule(sl) {
		if a.Gen == nil || a.Gen.Images < 1 || a.OutputTokens != 0 {
			t.Fatalf("arrival %d: %+v", a.Index, a)
		}
		if len(first) < 3 {
			first = append(first, a)
		}
	}
	// Rows 2 and 3 of the file: 16:57:50 → 18:16:14 is 4,704 s, 1.306667 s at 3600×.
	if first[1].At != 1306666667 || first[2].Gen.Images != 8 || first[2].Gen.Steps != 40 || first[1].Model != "M0001" {
		t.Fatalf("first arrivals %+v %+v %+v", first[0], first[1], *first[2].Gen)
	}
}

// Seeds of the Alibaba fuzz targets: rows of the real GenTD26 trace and of
// the text-to-image fixture.
var (
	loraSeeds = []string{
		"gmt_create,predict_type,predict_status,exec_time_seconds,groupId,prompt_length,negative_prompt_length,num_images_per_prompt,num_inference_steps,checkpoint_model_version_id,num_lora\n" +
			"2024-11-15 16:57:50,TXT_2_IMG,SUCCEED,32.0,G0000,63.0,26.0,1.0,30.0,M0000,0\n" +
			"2024-11-26 22:50:35,TXT_2_IMG,PENDING,0.0,G0325,,,,,,0\n" +
			"2024-11-26 22:51:13,IMG_2_IMG,SUCCEED,58.0,G1322,199.0,,8.0,38.0,M0001,1\n",
	}
	t2iSeeds = []string{
		`[{"timestamp": 1700000000.0, "ip": "10.0.0.1", "scene_id": "A", "base_model_id": "sd15", "controlnets": null, "loras": ["a"]},` + "\n" +
			`{"timestamp": 1700000003.2, "ip": "10.0.0.3", "scene_id": "B", "base_model_id": 7, "controlnets": ["depth", "pose"], "loras": ["a", 42]}]`,
		`{"timestamp": 5, "base_model_id": "m", "loras": ["x"], "scene_id": "A"}` + "\n" + `{"timestamp": 4, "base_model_id": "m", "loras": null}` + "\n",
	}
)

// FuzzReadAlibabaLoRA feeds arbitrary CSV to the GenTD26 reader (forced and
// detected): no panic, consistent counts, line-numbered strict errors.
func FuzzReadAlibabaLoRA(f *testing.F) {
	for _, s := range loraSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, keep bool) {
		fuzzLoad(t, data, "fuzz.csv", Options{KeepFailed: keep})
		fuzzLoad(t, data, "fuzz.csv", Options{Format: AlibabaLoRA, KeepFailed: keep})
	})
}

// FuzzReadAlibabaT2I does the same for the text-to-image trace, as a JSON
// array and as JSON Lines, with and without a scene filter.
func FuzzReadAlibabaT2I(f *testing.F) {
	for _, s := range t2iSeeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "A")
	}
	f.Fuzz(func(t *testing.T, data []byte, scene string) {
		fuzzLoad(t, data, "fuzz.json", Options{Scene: scene})
		fuzzLoad(t, data, "fuzz.json", Options{Format: AlibabaT2I, Scene: scene})
	})
}
