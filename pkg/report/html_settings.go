package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// settingRow is one of a run's settings as its report shows it: its flag,
// its value, and where it came from (the run file, the command line, or
// the default).
type settingRow struct{ Name, Value, From string }

// Where a setting came from, when not a run file.
const (
	fromCommandLine = "command line"
	fromDefault     = "default"
)

// settingRows are the settings s records for its report: those given
// first (each from the run file, settings_file, or the command line), then
// the rest of its effective settings (at their defaults), each part in
// name order; and how many were given.
func settingRows(s *metrics.Summary) (rows []settingRow, given int) {
	file := map[string]bool{}
	for _, n := range s.FileSettings {
		file[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(s.Settings)) {
		from := fromCommandLine
		if file[n] && s.SettingsFile != "" {
			from = s.SettingsFile
		}
		rows = append(rows, settingRow{n, settingText(s.Settings[n]), from})
	}
	given = len(rows)
	for _, n := range slices.Sorted(maps.Keys(s.EffectiveSettings)) {
		if _, ok := s.Settings[n]; !ok {
			rows = append(rows, settingRow{n, settingText(s.EffectiveSettings[n]), fromDefault})
		}
	}
	return rows, given
}

// settingText is a setting's value as a run file writes it: a list in
// brackets, a number or a switch as its text.
func settingText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = settingText(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}
