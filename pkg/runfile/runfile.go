// Package runfile reads and writes run files: a run's settings written down
// in YAML or JSON, every key a flag's own name, grouped (if the writer
// likes) in a few named sections. A run file fills the same flag set the
// command line does, under the flags the command line gives; a summary
// records the settings it ran with, so a finished run is repeated from its
// summary.
package runfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
)

// MaxSize bounds a run file (and a summary read as one).
const MaxSize = 16 << 20

// Sections are the names a run file may group its keys under, for its
// reader's sake: a section holds flag names, as the top level does.
var Sections = []string{"target", "workload", "requests", "load", "answer", "sessions", "slo", "observe", "outputs", "sweep", "plan"}

// SettingsKey is the summary's key of the settings a run ran with: a run
// file whose top level has it (a summary) is read from it alone.
const SettingsKey = "settings"

// FlagName is the flag that names a run file; it is never read from one.
const FlagName = "config"

// Error is one problem of a run file, at a line.
type Error struct {
	Path string
	Line int
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Series is a list of values under the key of a flag that takes one: the
// run file describes a series of runs, one a value, the flag left unset.
type Series struct {
	Flag   string
	Values []string
	Line   int
}

// File is what Apply read of a run file.
type File struct {
	// Path is the file's name, as messages give it.
	Path string
	// Series is the file's series of runs (nil: none).
	Series *Series
	// Lines are the line of the key of every flag the file gives a value
	// the command line did not (a series' flag, its list's line): where a
	// problem found later in that flag's value points (Locate).
	Lines map[string]int
}

// Apply reads the run file at path and sets every flag of fs it names that
// the command line did not set (fs is parsed already). suggest names the
// flag nearest an unknown key ("" for none). A list under a flag that takes
// one value is returned as the file's Series (one at most). It returns
// every problem at once, each with its line, and what it read (nil when
// the file could not be read as a mapping), whose Locate gives the
// problems found later in its settings their lines too.
func Apply(fs *pflag.FlagSet, path string, suggest func(string) string) (*File, error) {
	raw, err := bounded.ReadFile(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagName, err)
	}
	return ApplyBytes(fs, path, raw, suggest)
}

// ApplyBytes is Apply on a file's content, named path in messages.
func ApplyBytes(fs *pflag.FlagSet, path string, raw []byte, suggest func(string) string) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", FlagName, path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("--%s %s: empty: want a mapping of flag names to values", FlagName, path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{path, root.Line, errors.New("want a mapping of flag names to values at the top")}
	}
	if s := lookup(root, SettingsKey); s != nil && fs.Lookup(SettingsKey) == nil {
		if s.Kind != yaml.MappingNode {
			return nil, &Error{path, s.Line, fmt.Errorf("%s: want a mapping of flag names to values", SettingsKey)}
		}
		root = s // a summary: its settings are the run file
	}
	a := applier{fs: fs, path: path, suggest: suggest, seen: map[string]int{}, lines: map[string]int{}}
	a.mapping(root, "")
	return &File{Path: path, Series: a.series, Lines: a.lines}, errors.Join(a.errs...)
}

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

type applier struct {
	fs      *pflag.FlagSet
	path    string
	suggest func(string) string
	seen    map[string]int // flag → the line it was first given at
	lines   map[string]int // flag → its line, when the file's value holds
	series  *Series
	errs    []error
}

func (a *applier) fail(line int, format string, v ...any) {
	a.errs = append(a.errs, &Error{a.path, line, fmt.Errorf(format, v...)})
}

// mapping applies the keys of m, a section's when section is set.
func (a *applier) mapping(m *yaml.Node, section string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			a.fail(k.Line, "a key must be a flag's name")
			continue
		}
		name := k.Value
		f := a.fs.Lookup(name)
		switch {
		case name == FlagName:
			a.fail(k.Line, "%s: a run file does not name another", name)
		case f != nil:
			a.flag(f, k, v)
		case section == "" && slices.Contains(Sections, name):
			if v.Kind != yaml.MappingNode {
				a.fail(v.Line, "section %s: want a mapping of flag names to values", name)
				continue
			}
			a.mapping(v, name)
		default:
			hint := ""
			if s := a.suggestFor(name); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			} else if section == "" {
				hint = fmt.Sprintf(" (keys are flag names; sections: %s)", strings.Join(Sections, ", "))
			}
			where := ""
			if section != "" {
				where = " in section " + section
			}
			a.fail(k.Line, "unknown key %q%s%s", name, where, hint)
		}
	}
}

func (a *applier) suggestFor(name string) string {
	if a.suggest == nil {
		return ""
	}
	return a.suggest(name)
}

// flag applies the value v of key k to f, unless the command line set f.
func (a *applier) flag(f *pflag.Flag, k, v *yaml.Node) {
	if first, ok := a.seen[f.Name]; ok {
		a.fail(k.Line, "%s given twice (first at line %d)", f.Name, first)
		return
	}
	a.seen[f.Name] = k.Line
	if f.Changed {
		return // the command line's value holds
	}
	a.lines[f.Name] = k.Line
	var err error
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			a.fail(v.Line, "%s: no value", f.Name)
			return
		}
		if v.Value == f.DefValue {
			return // the default, as Expand writes it: not a setting given
		}
		err = a.fs.Set(f.Name, v.Value)
	case yaml.SequenceNode:
		items := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				a.fail(it.Line, "%s: a list of plain values, not of lists or mappings", f.Name)
				return
			}
			items = append(items, it.Value)
		}
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			switch {
			case len(items) == 0:
				a.fail(v.Line, "%s: an empty list", f.Name)
			case a.series != nil:
				a.fail(v.Line, "%s: a second list (the first: %s at line %d): a run file makes a series of one setting", f.Name, a.series.Flag, a.series.Line)
			default:
				a.series = &Series{Flag: f.Name, Values: items, Line: v.Line}
			}
			return
		}
		if len(items) > 0 {
			// Set marks the flag given (as Settings sees it), Replace puts
			// the items in as they are (Set would split one at commas).
			if err = a.fs.Set(f.Name, items[0]); err == nil {
				err = sv.Replace(items)
			}
		} else {
			err = sv.Replace(nil)
		}
	case yaml.MappingNode:
		// A JSON-valued flag (--extra-request-body, --chat-template-kwargs)
		// may be written as a mapping.
		var m map[string]any
		if derr := v.Decode(&m); derr != nil || f.Value.Type() != "string" {
			a.fail(v.Line, "%s takes a value, not a mapping", f.Name)
			return
		}
		var b []byte
		if b, err = json.Marshal(m); err == nil {
			err = a.fs.Set(f.Name, string(b))
		}
	default:
		a.fail(v.Line, "%s: want a value", f.Name)
		return
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = fmt.Errorf("want a value of type %s", f.Value.Type())
		}
		a.fail(v.Line, "%s %q: %v", f.Name, v.Value, err)
	}
}

// value is f's value as a run file writes it: a list for a list flag, a
// bool for a switch, else its text.
func value(f *pflag.Flag) any {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	if f.Value.Type() == "bool" {
		return f.Value.String() == "true"
	}
	return f.Value.String()
}

// Settings returns the flags of fs the command line or a run file set,
// with their values (less FlagName and those skip names), for a summary:
// the run file that repeats the run. hide is applied to every text (the
// run's secrets: credentials in URLs).
func Settings(fs *pflag.FlagSet, skip func(name string) bool, hide func(string) string) map[string]any {
	out := map[string]any{}
	fs.Visit(func(f *pflag.Flag) {
		if f.Name == FlagName || (skip != nil && skip(f.Name)) {
			return
		}
		out[f.Name] = hidden(value(f), hide)
	})
	return out
}

func hidden(v any, hide func(string) string) any {
	if hide == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return hide(x)
	case []string:
		y := make([]string, len(x))
		for i, s := range x {
			y[i] = hide(s)
		}
		return y
	}
	return v
}

// Effective returns every flag of fs (less FlagName, hidden flags and
// those skip names) with its effective value — given or default — as
// Expand writes them, for a summary: the settings the run had, whatever
// the defaults of another version. hide is applied to every text.
func Effective(fs *pflag.FlagSet, skip func(name string) bool, hide func(string) string) map[string]any {
	out := map[string]any{}
	for _, f := range expanded(fs, skip) {
		out[f.Name] = hidden(value(f), hide)
	}
	return out
}

// expanded are the flags Expand writes, in name order.
func expanded(fs *pflag.FlagSet, skip func(name string) bool) []*pflag.Flag {
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == FlagName || f.Hidden || f.Name == "help" || (skip != nil && skip(f.Name)) {
			return
		}
		flags = append(flags, f)
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	return flags
}

// Expand writes every flag of fs (less FlagName, hidden flags and those
// skip names) with its effective value — given or default — as a run
// file, in the flags' name order: the settings a run of fs would have;
// series' flag (nil: none) with its list. Read back with Apply, it gives
// the same settings.
func Expand(w io.Writer, fs *pflag.FlagSet, skip func(name string) bool, series *Series) error {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range expanded(fs, skip) {
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: f.Name, HeadComment: firstLine(f.Usage)}
		var v *yaml.Node
		val := value(f)
		if series != nil && f.Name == series.Flag {
			val = series.Values
		}
		switch x := val.(type) {
		case []string:
			v = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, s := range x {
				v.Content = append(v.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle})
			}
		case bool:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(x)}
		default:
			v = &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(x), Style: yaml.DoubleQuotedStyle}
		}
		m.Content = append(m.Content, k, v)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return err
	}
	return enc.Close()
}

// firstLine is a flag's help, its first line and at most 110 characters,
// as a comment.
func firstLine(usage string) string {
	if i := strings.IndexAny(usage, "\n"); i >= 0 {
		usage = usage[:i]
	}
	if r := []rune(usage); len(r) > 110 {
		usage = string(r[:107]) + "..."
	}
	return usage
}
