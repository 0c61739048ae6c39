package metrics

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// A figure is one number of the summary under its JSON key: a plain
// numeric field (request_throughput, completed…), a distribution's figure
// (p99_ttft_ms, send_lag_p99_ms…) or a numeric section key
// (request_goodput, goodput_share…). Thresholds, repeats and compare name
// figures by their keys (pkg/experiment); Figures and SetFigure read and
// set them from the same tables the JSON form is written from.

// figureField is a plain numeric field of Summary: its key and index.
type figureField struct {
	key   string
	index int
	// omitEmpty: absent when 0 (omitempty, or a Rate: null).
	omitEmpty bool
}

var plainFigures = sync.OnceValue(func() []figureField {
	var out []figureField
	t := reflect.TypeFor[Summary]()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Float64, reflect.Int64, reflect.Int, reflect.Uint64:
			out = append(out, figureField{tag, i, opts == "omitempty" || f.Type == reflect.TypeFor[Rate]()})
		}
	}
	return out
})

// numeric returns the number v holds (through pointers), if it is one.
func numeric(v reflect.Value) (float64, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		return v.Float(), true
	case reflect.Int, reflect.Int64, reflect.Int32:
		return float64(v.Int()), true
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		return float64(v.Uint()), true
	}
	return 0, false
}

// numericType reports whether t is a number, or a pointer to one.
func numericType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float64, reflect.Float32, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return true
	}
	return false
}

// numericSection reports whether section f holds a number.
func numericSection(f section) bool {
	return numericType(reflect.TypeOf(f.into(&Summary{})).Elem())
}

// FigureKeys lists every key a summary may hold a figure under, sorted.
func FigureKeys() []string { return figureKeys() }

var figureKeys = sync.OnceValue(func() []string {
	var keys []string
	for _, f := range plainFigures() {
		keys = append(keys, f.key)
	}
	var d Dist
	for _, f := range distFields {
		for _, st := range d.stats() {
			if f.only == nil || slices.Contains(f.only, st.suffix) {
				keys = append(keys, f.key(st))
			}
		}
	}
	for _, a := range (&Summary{}).vllmAliases() {
		keys = append(keys, a.theirs)
	}
	for _, f := range sectionFields {
		if numericSection(f) {
			keys = append(keys, f.key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
})

// Figures returns the figures s holds, by key: those its JSON form
// writes as numbers (a distribution with no sample, a section s does not
// have, a token figure of a run without tokens: absent).
func (s *Summary) Figures() map[string]float64 {
	out := map[string]float64{}
	v := reflect.ValueOf(s).Elem()
	for _, f := range plainFigures() {
		var x float64
		switch fv := v.Field(f.index); fv.Kind() {
		case reflect.Float64:
			x = fv.Float()
			if math.IsInf(x, 0) || math.IsNaN(x) {
				continue // a rate of inf is a string
			}
		case reflect.Uint64:
			x = float64(fv.Uint())
		default:
			x = float64(fv.Int())
		}
		if x == 0 && f.omitEmpty {
			continue
		}
		out[f.key] = x
	}
	for _, f := range distFields {
		if (s.NoTokenMetrics() && f.tokens) || (f.answers && s.Answers == nil) {
			continue
		}
		d := f.get(s)
		if d.Empty() {
			continue
		}
		for _, st := range d.stats() {
			if f.only == nil || slices.Contains(f.only, st.suffix) {
				out[f.key(st)] = finite(*st.v)
			}
		}
	}
	for _, a := range s.vllmAliases() {
		if x, ok := out[a.ours]; ok {
			out[a.theirs] = x
		}
	}
	for _, f := range sectionFields {
		if v, ok := f.get(s); ok {
			if x, ok := numeric(reflect.ValueOf(v)); ok {
				out[f.key] = finite(x)
			}
		}
	}
	return out
}

// SetFigure sets the figure under key (one of FigureKeys) to v, a count
// rounded; it reports whether key names a figure.
func (s *Summary) SetFigure(key string, v float64) bool {
	for _, f := range plainFigures() {
		if f.key == key {
			switch x := reflect.ValueOf(s).Elem().Field(f.index); x.Kind() {
			case reflect.Float64:
				x.SetFloat(v)
			case reflect.Uint64:
				x.SetUint(uint64(max(v, 0) + 0.5))
			default:
				x.SetInt(int64(math.Round(v)))
			}
			return true
		}
	}
	for _, f := range distFields {
		d := f.get(s)
		for _, st := range d.stats() {
			if f.key(st) == key {
				*st.v = v
				return true
			}
		}
	}
	for _, a := range s.vllmAliases() {
		if a.theirs == key {
			return s.SetFigure(a.ours, v)
		}
	}
	for _, f := range sectionFields {
		if f.key != key || !numericSection(f) {
			continue
		}
		x := reflect.ValueOf(f.into(s)).Elem()
		for x.Kind() == reflect.Pointer {
			if x.IsNil() {
				x.Set(reflect.New(x.Type().Elem()))
			}
			x = x.Elem()
		}
		switch x.Kind() {
		case reflect.Float64, reflect.Float32:
			x.SetFloat(v)
		case reflect.Uint64, reflect.Uint32, reflect.Uint:
			x.SetUint(uint64(math.Round(max(v, 0))))
		default:
			x.SetInt(int64(math.Round(v)))
		}
		return true
	}
	return false
}
