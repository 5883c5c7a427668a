package cuex

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// Error is one CUE error in a definition, translated for people: which
// definition, which field, what went wrong (CUE's message names the
// conflicting values) and where in the definition's source.
type Error struct {
	// Source is the definition the error is in.
	Source Source
	// Path is the CUE field path (`output.spec.replicas`), empty for the whole value.
	Path string
	// Message says what is wrong.
	Message string
	// Positions are "file:line:col" places in the definition's source.
	Positions []string
	// Err, when set, is the kind of failure (ErrTimeout) for errors.Is.
	Err error
}

// ErrTimeout is wrapped by the Error of an evaluation that did not finish
// within the Engine's Timeout.
var ErrTimeout = errors.New("CUE evaluation time budget exceeded")

// Unwrap returns the kind of failure, if any.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if len(e.Positions) > 0 {
		b.WriteString(" (at ")
		b.WriteString(strings.Join(e.Positions, ", "))
		b.WriteString(")")
	}
	return b.String()
}

// Errors is several Errors from one evaluation.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find each Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// translate converts a CUE error into Error values. Paths are shown as CUE
// shows them; positions are mapped back to the definition's file. prefix, if
// set, is dropped from the front of paths. Duplicates are removed and "N
// errors in empty disjunction" summaries are dropped when their details
// follow.
func translate(src Source, err error, prefix string) error {
	if err == nil {
		return nil
	}
	var own *Error
	if errors.As(err, &own) {
		return err
	}
	list := cueerrors.Errors(err)
	if len(list) == 0 {
		return &Error{Source: src, Message: err.Error()}
	}
	var out Errors
	seen := map[string]*Error{}
	for _, ce := range list {
		format, args := ce.Msg()
		msg := fmt.Sprintf(format, args...)
		if strings.Contains(msg, "errors in empty disjunction") && len(list) > 1 {
			continue
		}
		path := strings.Join(ce.Path(), ".")
		if prefix != "" {
			path = strings.TrimPrefix(strings.TrimPrefix(path, prefix), ".")
		}
		e := &Error{Source: src, Path: path, Message: msg}
		for _, p := range cueerrors.Positions(ce) {
			if pos := mapPosition(src, p); pos != "" {
				e.Positions = append(e.Positions, pos)
			}
		}
		k := e.Path + "\x00" + e.Message
		if prev, ok := seen[k]; ok {
			prev.Positions = appendUnique(prev.Positions, e.Positions...)
			sort.Strings(prev.Positions)
			continue
		}
		sort.Strings(e.Positions)
		seen[k] = e
		out = append(out, e)
	}
	if len(out) == 0 {
		return &Error{Source: src, Message: strings.TrimSpace(cueerrors.Details(err, nil))}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

// mapPosition renders p as file:line:col in the definition's own file,
// or "" for positions outside it (values filled from Go).
func mapPosition(src Source, p token.Pos) string {
	if !p.IsValid() {
		return ""
	}
	if p.Filename() != src.filename() {
		return ""
	}
	line, col := p.Line(), p.Column()
	switch {
	case line > src.ImportLines:
		line += src.LineOffset
		col += src.ColumnOffset
	case src.ImportFirstLine > 0:
		line += src.ImportFirstLine - 1
	}
	return fmt.Sprintf("%s:%d:%d", src.filename(), line, col)
}

// Translate converts an error of evaluating src into Error values (see
// Error); prefix is dropped from the front of field paths.
func Translate(src Source, err error, prefix string) error { return translate(src, err, prefix) }

func appendUnique(list []string, more ...string) []string {
	for _, m := range more {
		dup := false
		for _, l := range list {
			if l == m {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, m)
		}
	}
	return list
}
