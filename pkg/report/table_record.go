package report

import (
	"fmt"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// tableSection is one section of the console table as the HTML report
// shows it: its heading, its label/value rows, and the lines that are not
// such rows (the columns of a per-turn or per-endpoint table, notes).
type tableSection struct {
	Title string
	Rows  []tableRow
	Text  []string
}

type tableRow struct{ Label, Value string }

// tableRecorder is the writer the console table is recorded on instead of
// printed (table.line and table.row hand it their lines and rows): the HTML
// report lists every figure the table prints from the one code that prints
// them, so the two cannot drift apart.
type tableRecorder struct {
	sections []tableSection
}

// Write takes text written to the recorder other than through a table's
// line and row: one line at a time.
func (r *tableRecorder) Write(p []byte) (int, error) {
	for l := range strings.Lines(string(p)) {
		r.text(strings.TrimRight(l, "\n"))
	}
	return len(p), nil
}

// current is the section lines go to: the last, or a new untitled one.
func (r *tableRecorder) current() *tableSection {
	if len(r.sections) == 0 {
		r.sections = append(r.sections, tableSection{})
	}
	return &r.sections[len(r.sections)-1]
}

// row records a row as the table prints it (floats with two decimals).
func (r *tableRecorder) row(label string, v any) {
	value := fmt.Sprint(v)
	if x, ok := v.(float64); ok {
		value = fmt.Sprintf("%.2f", x)
	}
	s := r.current()
	s.Rows = append(s.Rows, tableRow{Label: strings.TrimSuffix(label, ":"), Value: value})
}

// text records a line printed whole: a heading (a title centred in a rule
// of '=', '-' or '!') opens a section, a bare rule ends one, blank lines
// are dropped, a line laid out as a row ("%-40s value", the label ending
// in ':') is a row, and any other line is the section's text.
func (r *tableRecorder) text(l string) {
	t := strings.TrimSpace(l)
	switch {
	case t == "":
		return
	case isRule(t):
		if strings.Trim(t, t[:1]) == "" { // a bare rule: the section ends
			r.sections = append(r.sections, tableSection{})
			return
		}
		title := strings.TrimSpace(strings.Trim(t, t[:1]))
		if s := r.current(); s.Title == "" && len(s.Rows) == 0 && len(s.Text) == 0 {
			s.Title = title
		} else {
			r.sections = append(r.sections, tableSection{Title: title})
		}
		return
	}
	if len(l) > 41 && l[40] == ' ' && strings.HasSuffix(strings.TrimRight(l[:40], " "), ":") {
		s := r.current()
		s.Rows = append(s.Rows, tableRow{Label: strings.TrimSuffix(strings.TrimRight(l[:40], " "), ":"), Value: strings.TrimSpace(l[41:])})
		return
	}
	s := r.current()
	s.Text = append(s.Text, strings.TrimRight(l, " "))
}

// isRule reports whether t starts and ends with two of the same rule
// character: a heading or a bare rule of the table.
func isRule(t string) bool {
	if len(t) < 4 {
		return false
	}
	c := t[0]
	return (c == '=' || c == '-' || c == '!') && t[1] == c && t[len(t)-1] == c && t[len(t)-2] == c
}

// tableSections records the console table of s (TableOutput: the result
// table, breakdowns, sessions, agentic conversations, goodput), each
// section with something in it.
func tableSections(s *metrics.Summary) []tableSection {
	r := &tableRecorder{}
	_ = TableOutput(s).Write(r) // the recorder fails no write
	out := r.sections[:0]
	for _, sec := range r.sections {
		if len(sec.Rows) > 0 || len(sec.Text) > 0 {
			out = append(out, sec)
		}
	}
	return out
}

// promptErrorText is the table's figure of the prompt tokens the server
// counted against the target lengths. A rerank or score request's prompt
// is not the target length: the server counts the query with each
// document (and its template's tokens), so the gap is expected and said.
// outputFromText says for how many completed requests the client counted
// the output tokens, the server giving no count, and how ("" when the
// server counted every one): "40 of 100 requests (the server gave no
// count): 40 as the stream's chunks".
func outputFromText(s *metrics.Summary) string {
	var n int64
	var how []string
	for _, k := range []string{record.OutputChunks, record.OutputText, record.OutputRequested} {
		v := s.OutputTokensFrom[k]
		if v == 0 {
			continue
		}
		n += v
		switch k {
		case record.OutputChunks:
			how = append(how, fmt.Sprintf("%d as the stream's chunks", v))
		case record.OutputText:
			how = append(how, fmt.Sprintf("%d as the answer's words (or --tokenizer's tokens)", v))
		case record.OutputRequested:
			how = append(how, fmt.Sprintf("%d taken at the length asked for (TPOT and output throughput assume it)", v))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d requests (the server gave no count): %s", n, s.Completed, strings.Join(how, ", "))
}

func promptErrorText(s *metrics.Summary) any {
	if s.Measure() == api.MeasureScores {
		return fmt.Sprintf("%.2f (expected: the server counts the query with every document, not the target length)", s.PromptTokensErrorMean)
	}
	return s.PromptTokensErrorMean
}
