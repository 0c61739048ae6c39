package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// csvResults are results of every shape a record has: a streamed answer,
// an image generation, a failure whose message and model need quoting and
// look like formulas, a request cut by the client, a session's turn sent
// to an endpoint.
func csvResults() []*record.Request {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	text := &record.Request{}
	text.Reset()
	text.Index, text.Scheduled, text.Sent, text.FirstToken, text.End = 4, ms(10), ms(10.5), ms(30), ms(60)
	text.TokenTimes = []time.Duration{ms(30), ms(41), ms(52), ms(60)}
	text.InputLen, text.OutputLen, text.PromptTokens, text.CompletionTokens, text.CachedTokens = 64, 4, 61, 4, 16
	text.Model, text.Status, text.Retries = "llama, 8b", 200, 1
	gen := &record.Request{}
	gen.Reset()
	gen.Index, gen.Sent, gen.End, gen.Generate, gen.Generated, gen.Status = 5, ms(1), ms(90), 2, 1, 200
	failed := &record.Request{}
	failed.Reset()
	failed.Index, failed.Scheduled, failed.ErrorClass, failed.Error = 6, ms(3), record.ErrHTTP5xx, "=HYPERLINK(\"x\")\nsecond line"
	failed.Model, failed.Status = "-model", 503
	cut := &record.Request{}
	cut.Reset()
	cut.Index, cut.Sent, cut.FirstToken, cut.End, cut.CancelAfter, cut.Cancelled = 7, ms(2), ms(5), ms(8), ms(6), true
	cut.TokenTimes = []time.Duration{ms(5)}
	turn := &record.Request{}
	turn.Reset()
	turn.Index, turn.Sent, turn.FirstToken, turn.End, turn.Status = 8, ms(2), ms(4), ms(9), 200
	turn.TokenTimes = []time.Duration{ms(4), ms(9)}
	turn.Session, turn.Turn, turn.HistoryTokens, turn.Endpoint = 3, 2, 120, 2
	return []*record.Request{text, gen, failed, cut, turn}
}

// TestCSVRowsEqualRecords: the CSV has a header and one row per record,
// and each cell holds what the record holds under the column's key (an
// absent or null field empty; itl_ms as the gaps' count, mean and max;
// text that a spreadsheet would run as a formula after a quote).
func TestCSVRowsEqualRecords(t *testing.T) {
	var jsonl, table bytes.Buffer
	table.Write(CSVHeader())
	for _, r := range csvResults() {
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		jsonl.Write(AppendRecord(nil, &s))
		table.Write(AppendRecordCSV(nil, &s))
	}
	rows, err := csv.NewReader(&table).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, table.String())
	}
	header, rows := rows[0], rows[1:]
	recs := jsonlRecords(t, jsonl.Bytes())
	if len(rows) != len(recs) {
		t.Fatalf("%d rows, %d records", len(rows), len(recs))
	}
	for i, rec := range recs {
		cells := map[string]string{}
		for j, col := range header {
			cells[col] = rows[i][j]
		}
		for k, v := range rec {
			if k == "itl_ms" || strings.HasPrefix(k, "http_") {
				continue // the gaps below; the HTTP phases are not columns
			}
			want := ""
			switch x := v.(type) {
			case nil:
			case string:
				want = x
				if x != "" && strings.ContainsRune("=+-@", rune(x[0])) {
					want = "'" + x
				}
			default:
				want = fmt.Sprint(x)
			}
			if cells[k] != want {
				t.Errorf("record %d: %s cell %q, record %q", i, k, cells[k], v)
			}
			delete(cells, k)
		}
		// The gaps.
		var gaps []float64
		for _, g := range rec["itl_ms"].([]any) {
			f, _ := g.(json.Number).Float64()
			gaps = append(gaps, f)
		}
		if got := cells["itl_count"]; got != strconv.Itoa(len(gaps)) {
			t.Errorf("record %d: itl_count %q, want %d", i, got, len(gaps))
		}
		wantMean, wantMax := "", ""
		if len(gaps) > 0 {
			sum, top := 0.0, 0.0
			for _, g := range gaps {
				sum, top = sum+g, max(top, g)
			}
			wantMean, wantMax = strconv.FormatFloat(sum/float64(len(gaps)), 'f', 3, 64), strconv.FormatFloat(top, 'f', 3, 64)
		}
		if cells["itl_mean_ms"] != wantMean || cells["itl_max_ms"] != wantMax {
			t.Errorf("record %d: itl mean, max %q %q, want %q %q", i, cells["itl_mean_ms"], cells["itl_max_ms"], wantMean, wantMax)
		}
		delete(cells, "itl_count")
		delete(cells, "itl_mean_ms")
		delete(cells, "itl_max_ms")
		for col, v := range cells { // columns of fields this record leaves out
			if v != "" {
				t.Errorf("record %d: %s = %q, a field the record does not have", i, col, v)
			}
		}
	}
	columns := 0
	for _, f := range recordFields {
		if !f.jsonlOnly {
			columns++
		}
	}
	if len(header) != columns+2 {
		t.Errorf("%d columns for %d record fields", len(header), columns)
	}
}

// TestCreateRecordsCSV: the file has its header even when no request
// finished, and the rows after it.
func TestCreateRecordsCSV(t *testing.T) {
	w, path := createIn(t, CreateRecordsCSV, "r.csv")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, CSVHeader()) {
		t.Errorf("empty run's CSV:\n%s", b)
	}
	w, _ = createIn(t, CreateRecordsCSV, "r.csv")
	ws := RecordWriters{w}
	for _, r := range csvResults() {
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		ws.Add(&s)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(mustRead(t, ws[0].path))).ReadAll()
	if err != nil || len(rows) != 1+len(csvResults()) {
		t.Errorf("%d rows, %v", len(rows), err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
