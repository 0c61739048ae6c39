// Package note is the one interface a run's parts take their notes and
// warnings through (the model check's, the schedule's, the monitor's); the
// command's logger (runner.NewLogger) implements it.
package note

// Logger takes notes and warnings.
type Logger interface {
	Infof(format string, a ...any)
	Warnf(format string, a ...any)
}
