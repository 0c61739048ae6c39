package arrival

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadCSVErrorsNameLineAndField(t *testing.T) {
	head := ScheduleHeader + "\n"
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"bad number", head + "0,0.000000,1,1,m,0,0\n1,0.5,x,1,m,0,1\n", []string{"line 3", "input_len"}},
		{"several fields", head + "0,-1,1,y,m,0,0\n", []string{"line 2", "time_s", "output_len"}},
		{"not finite", head + "0,NaN,1,1,m,0,0\n", []string{"line 2", "time_s"}},
		{"too large", head + "0,1e300,1,1,m,0,0\n", []string{"line 2", "time_s"}},
		{"negative length", head + "0,1,-5,1,m,0,0\n", []string{"line 2", "input_len"}},
		{"field count", head + "0,1,1,1,m,0\n", []string{"line 2", "wrong number of fields"}},
		{"bad quote on the first row", head + "0,1,1,1,\"m,0,0\n", []string{"line 2"}},
		{"header", "index,time\n", []string{"line 1", "header"}},
		{"empty", "", []string{"header"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tc.data))
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
}

// FuzzReadCSV: the schedule reader never panics, and what it reads writes
// back as a schedule that reads the same.
func FuzzReadCSV(f *testing.F) {
	head := ScheduleHeader + "\n"
	for _, s := range []string{
		head + "0,0.000000,10,5,m,0,0\n1,0.250000,20,6,\"a,b\",1,1\n",
		head + "0,1.5,1,1,,0,0",
		head + "0,x,1,1,m,0,0\n",
		head + "0,1,1,1,\"m\"\"q\",0,0\r\n",
		head, "", "index\n", head + "0,1,1,1,m,0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		arr, err := ReadCSV(strings.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "schedule: ") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		for _, a := range arr {
			if a.At < 0 || a.InputTokens < 0 || a.OutputTokens < 0 || a.Images < 0 {
				t.Fatalf("accepted %+v", a)
			}
		}
		var w bytes.Buffer
		if _, err := WriteCSV(&w, slices.Values(arr)); err != nil {
			t.Fatal(err)
		}
		again, err := ReadCSV(bytes.NewReader(w.Bytes()))
		if err != nil {
			t.Fatalf("written back, it does not read: %v\n%s", err, w.Bytes())
		}
		var w2 bytes.Buffer
		WriteCSV(&w2, slices.Values(again))
		if !bytes.Equal(w.Bytes(), w2.Bytes()) {
			t.Fatalf("round trip changed the schedule:\n%s\n%s", w.Bytes(), w2.Bytes())
		}
	})
}

// TestCSVOptionalColumns: each set of optional columns writes its header
// and rows in order, and reads back what it wrote; a header of an unknown
// arrangement (the columns swapped) is refused.
func TestCSVOptionalColumns(t *testing.T) {
	in := []Arrival{
		{Index: 0, At: 1500 * time.Millisecond, InputTokens: 10, OutputTokens: 5, Model: "m", Endpoint: 1, CancelAfter: 250 * time.Millisecond},
		{Index: 1, At: 2 * time.Second, InputTokens: 11, OutputTokens: 6, Endpoint: 0},
	}
	for _, c := range []CSVColumns{{}, {Endpoint: true}, {Cancel: true}, {Endpoint: true, Cancel: true}} {
		var b strings.Builder
		b.WriteString(c.Header() + "\n")
		for _, a := range in {
			b.Write(c.AppendRow(nil, a))
		}
		head, _, _ := strings.Cut(b.String(), "\n")
		if got, ok := ParseCSVHeader(head); !ok || got != c {
			t.Fatalf("%+v: header %q parsed as %+v, %v", c, head, got, ok)
		}
		out, err := ReadCSV(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("%+v: %v\n%s", c, err, b.String())
		}
		for i, a := range out {
			want := in[i]
			if !c.Endpoint {
				want.Endpoint = 0
			}
			if !c.Cancel {
				want.CancelAfter = 0
			}
			if a.Index != want.Index || a.At != want.At || a.InputTokens != want.InputTokens || a.Model != want.Model || a.Endpoint != want.Endpoint || a.CancelAfter != want.CancelAfter {
				t.Errorf("%+v: row %d read %+v, want %+v", c, i, a, want)
			}
		}
	}
	swapped := ScheduleHeader + "," + CancelColumn + "," + EndpointColumn
	if _, err := ReadCSV(strings.NewReader(swapped + "\n")); err == nil {
		t.Errorf("header %q: accepted, want an error", swapped)
	}
}
