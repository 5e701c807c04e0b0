package transform

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
)

// TestCheck: what can be checked without the tables (syntax, functions)
// is reported for every expression at once, with its position; field
// names are not checked here.
func TestCheck(t *testing.T) {
	at := func(line int) config.Pos { return config.Pos{File: "p.yaml", Line: line, Column: 5} }
	steps := []config.Step{
		{Filter: &config.Expr{Text: "x > 0 &&", Pos: at(3)}, Pos: at(3)},
		{Set: []config.Assignment{
			{Field: "a", Expr: config.Expr{Text: "uper(s)", Pos: at(5)}},
			{Field: "b", Expr: config.Expr{Text: "now()", Pos: at(6)}},
			{Field: "c", Expr: config.Expr{Text: "upper(unknown_field) + lower(s)", Pos: at(7)}},
		}, Pos: at(4)},
		{Route: &config.Route{Rules: []config.RouteRule{{When: &config.Expr{Text: "kind == ", Pos: at(9)}, Sink: "s"}}, Unmatched: "skip"}, Pos: at(8)},
		{Flatten: "items", Pos: at(10)},
	}
	err := Check(steps)
	if err == nil {
		t.Fatal("Check accepted broken expressions")
	}
	got := err.Error()
	for _, want := range []string{
		"p.yaml:3:5: transform[0].filter: syntax error",
		`p.yaml:5:5: transform[1].set.a: unknown function uper (did you mean "upper"?)`,
		"p.yaml:6:5: transform[1].set.b: now() is not allowed",
		"p.yaml:9:5: transform[2].route.rules[0].when: syntax error",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "set.c") {
		t.Errorf("a valid expression reported:\n%s", got)
	}
	if n := len(strings.Split(got, "\n")); n != 4 {
		t.Errorf("%d errors, want 4:\n%s", n, got)
	}
	if err := Check(steps[3:]); err != nil {
		t.Errorf("Check(flatten) = %v", err)
	}
}
