package config

import (
	"sort"
	"strconv"
	"strings"
)

// Error is one problem found in a configuration file.
type Error struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int // 1-based; 0 when unknown
	Path   string
	Msg    string
}

// Error formats e as "FILE:LINE:COL: PATH: MSG", leaving out empty parts.
func (e *Error) Error() string {
	var loc []string
	if e.File != "" {
		loc = append(loc, e.File)
	}
	if e.Line > 0 {
		loc = append(loc, strconv.Itoa(e.Line))
		if e.Column > 0 {
			loc = append(loc, strconv.Itoa(e.Column))
		}
	}
	var b strings.Builder
	if len(loc) > 0 {
		b.WriteString(strings.Join(loc, ":"))
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a configuration, ordered by position.
type Errors struct {
	List []*Error
}

// Error returns one line per problem.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, err := range e.List {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual problems, for errors.Is and errors.As.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, err := range e.List {
		out[i] = err
	}
	return out
}

// errorsOrNil sorts list by position and wraps it, or returns nil when empty.
func errorsOrNil(list []*Error) error {
	if len(list) == 0 {
		return nil
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].Line != list[j].Line {
			return list[i].Line < list[j].Line
		}
		return list[i].Column < list[j].Column
	})
	return &Errors{List: list}
}
