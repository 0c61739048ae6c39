package runfile

import (
	"errors"
	"strings"
)

// Locate gives the problems of err found after the file was read — the
// checks of the settings' values and of the settings together, which name
// a flag as --name — the file's line: a problem that names a flag the file
// set is returned as an *Error at that flag's line (the first such flag it
// names), the leading "--" of a message about that flag alone dropped, as
// the file's own problems read ("exp.yaml:7: max-concurrency -3: want
// ≥ 1"; "exp.yaml:2: --insecure and --ca-cert: choose one"). The problems joined
// in err (errors.Join, and wrappers that add nothing to the message, such
// as a usage error's) are located one by one. A problem that names no flag
// of the file (one given on the command line keeps its message), or that
// has a line already, is kept as it is; so is err when f is nil.
func (f *File) Locate(err error) error {
	if f == nil || err == nil || len(f.Lines) == 0 {
		return err
	}
	if _, ok := err.(*Error); ok {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		changed := false
		for i, e := range errs {
			out[i] = f.Locate(e)
			changed = changed || out[i] != e
		}
		if !changed {
			return err
		}
		return errors.Join(out...)
	}
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil && inner.Error() == msg {
		if l := f.Locate(inner); l != inner {
			return l
		}
		return err
	}
	name, at := f.flagNamed(msg)
	if name == "" {
		return err
	}
	if head, _, _ := strings.Cut(msg, ": "); at == 0 && strings.Count(head, "--") == 1 {
		msg = msg[2:] // "--num-prompts -5: …", not "--insecure and --ca-cert: …"
	}
	return &Error{Path: f.Path, Line: f.Lines[name], Err: &located{msg: msg, err: err}}
}

// flagNamed returns the first flag of the file msg names as --name, and
// where in msg; "" for none.
func (f *File) flagNamed(msg string) (name string, at int) {
	for i := 0; i+2 < len(msg); i++ {
		if msg[i] != '-' || msg[i+1] != '-' || (i > 0 && nameByte(msg[i-1])) {
			continue
		}
		j := i + 2
		for j < len(msg) && nameByte(msg[j]) {
			j++
		}
		n := strings.TrimRight(msg[i+2:j], "-")
		if _, ok := f.Lines[n]; ok && n != "" {
			return n, i
		}
		i = j - 1
	}
	return "", 0
}

// nameByte reports whether c may be part of a flag's name.
func nameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// located is a problem given its file's line: its message (the flag's
// leading "--" dropped) over the problem itself, for errors.As.
type located struct {
	msg string
	err error
}

func (l *located) Error() string { return l.msg }
func (l *located) Unwrap() error { return l.err }
