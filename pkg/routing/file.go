package routing

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxFileBytes bounds a model map file.
const maxFileBytes = 16 << 20

// ParseFile parses a model map file, YAML or JSON (JSON is read as YAML),
// in one of two forms:
//
//	# a table: trace value → served name; "*" catches the rest, and an
//	# empty or null name is the run's --model
//	ChatGPT: llama-8b
//	GPT-4: llama-70b
//	"*": llama-8b
//
//	# a strategy, with the served names (or a table under "map")
//	strategy: zipf:1.1          # hash, round-robin, zipf:S, table, keep, default
//	served_models: [lora-a, lora-b, lora-c]
//
// The second form is recognised by a "strategy" key; a trace value named
// "strategy" goes under "map". Errors name the file and line.
func ParseFile(name string, data []byte) (*Map, error) {
	fail := func(line int, format string, a ...any) error {
		if line > 0 {
			return fmt.Errorf("model map %s: line %d: %s", name, line, fmt.Sprintf(format, a...))
		}
		return fmt.Errorf("model map %s: %s", name, fmt.Sprintf(format, a...))
	}
	if len(data) > maxFileBytes {
		return nil, fail(0, "larger than %d MiB", maxFileBytes>>20)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fail(0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fail(0, "empty: want a table (trace value: served name) or a strategy")
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fail(top.Line, "want a mapping (trace value: served name, or strategy: …), got %s", kindName(top))
	}
	if findKey(top, "strategy") == nil {
		m := &Map{Strategy: Table}
		tbl, err := parseTable(top, fail)
		if err != nil {
			return nil, err
		}
		m.Table = tbl
		if len(tbl) == 0 {
			return nil, fail(top.Line, "the table is empty")
		}
		return m, nil
	}
	var m *Map
	var errs []error
	var table map[string]string
	var served []string
	var sNode *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], resolve(top.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fail(k.Line, "a key must be a plain value"))
			continue
		}
		switch k.Value {
		case "strategy":
			if v == nil || v.Kind != yaml.ScalarNode {
				errs = append(errs, fail(k.Line, "strategy: want hash, round-robin, zipf:S, table, keep or default"))
				continue
			}
			if strings.EqualFold(strings.TrimSpace(v.Value), "table") {
				m = &Map{Strategy: Table}
				continue
			}
			sm, ok, err := ParseStrategy(v.Value)
			switch {
			case err != nil:
				errs = append(errs, fail(v.Line, "strategy: %v", err))
			case !ok:
				errs = append(errs, fail(v.Line, "strategy %q: want hash, round-robin, zipf:S, table, keep or default", clip(v.Value)))
			default:
				m = sm
			}
		case "served_models", "served":
			if v == nil || v.Kind != yaml.SequenceNode {
				errs = append(errs, fail(k.Line, "%s: want a list of names", k.Value))
				continue
			}
			for _, e := range v.Content {
				e = resolve(e)
				if e == nil || e.Kind != yaml.ScalarNode || e.Value == "" {
					errs = append(errs, fail(k.Line, "%s: every entry must be a non-empty name", k.Value))
					continue
				}
				served = append(served, e.Value)
			}
		case "s", "exponent":
			sNode = v
		case "map", "table", "models":
			if v == nil || v.Kind != yaml.MappingNode {
				errs = append(errs, fail(k.Line, "%s: want a mapping of trace value: served name", k.Value))
				continue
			}
			t, err := parseTable(v, fail)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			table = t
		default:
			errs = append(errs, fail(k.Line, "unknown key %q (want strategy, served_models, s, map)", clip(k.Value)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fail(top.Line, "no strategy")
	}
	if sNode != nil {
		if m.Strategy != Zipf {
			return nil, fail(sNode.Line, "s: only zipf takes an exponent")
		}
		sm, _, err := ParseStrategy("zipf:" + sNode.Value)
		if err != nil || sNode.Kind != yaml.ScalarNode {
			return nil, fail(sNode.Line, "s: want an exponent in (0, %d]", maxZipfS)
		}
		m.S = sm.S
	}
	if table != nil && m.Strategy != Table {
		return nil, fail(top.Line, "a map is only used by strategy table (this one is %s)", m.Strategy)
	}
	if m.Strategy == Table {
		if len(table) == 0 {
			return nil, fail(top.Line, "strategy table needs a non-empty map")
		}
		m.Table = table
	}
	m.Served = served
	return m, nil
}

// maxKey is YAML's limit on an implicit key: a longer name read through an
// alias could not be written back as a map, in YAML or in JSON.
const maxKey = 1024

// parseTable reads a mapping of trace value → served name.
func parseTable(n *yaml.Node, fail func(int, string, ...any) error) (map[string]string, error) {
	t := make(map[string]string, len(n.Content)/2)
	line := make(map[string]int, len(n.Content)/2)
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode {
			errs = append(errs, fail(n.Content[i].Line, "a trace value must be a plain name, not a %s", kindName(n.Content[i])))
			continue
		}
		if len(k.Value) > maxKey {
			errs = append(errs, fail(k.Line, "%q: a trace value longer than %d characters (YAML and JSON maps cannot key on it)", clip(k.Value), maxKey))
			continue
		}
		if v == nil || v.Kind != yaml.ScalarNode {
			errs = append(errs, fail(k.Line, "%q: want a served name (empty or null: --model), not a %s", clip(k.Value), kindName(n.Content[i+1])))
			continue
		}
		to := v.Value
		if v.Tag == "!!null" {
			to = ""
		}
		if first, dup := line[k.Value]; dup {
			errs = append(errs, fail(k.Line, "%q is listed twice (first on line %d)", clip(k.Value), first))
			continue
		}
		t[k.Value], line[k.Value] = strings.TrimSpace(to), k.Line
	}
	return t, errors.Join(errs...)
}

// resolve follows an alias to the node it names (nil for a broken alias).
func resolve(n *yaml.Node) *yaml.Node {
	for range 8 {
		if n == nil || n.Kind != yaml.AliasNode {
			return n
		}
		n = n.Alias
	}
	return nil
}

func findKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
