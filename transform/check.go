package transform

import (
	"fmt"

	"github.com/expr-lang/expr/ast"

	"github.com/etl-project/etl/config"
)

// Check checks what of the chain can be checked before the tables are
// read: every expression parses, and every function it calls exists and
// is allowed. Field names and types are checked by Inputs and Compile,
// which need the output columns. The errors are CompileErrors, with each
// expression's position in the file.
func Check(steps []config.Step) error {
	var errs CompileErrors
	check := func(path string, e config.Expr, fallback config.Pos) {
		pos := e.Pos
		if pos.Line == 0 {
			pos = fallback
		}
		tree, perr := parseExpr(e.Text)
		if perr != nil {
			errs = append(errs, &CompileError{Pos: pos, Path: path, Msg: exprMsg(e.Text, perr)})
			return
		}
		if ferr := checkCalls(tree); ferr != nil {
			errs = append(errs, &CompileError{Pos: pos, Path: path, Msg: exprMsg(e.Text, ferr)})
		}
	}
	for i, st := range steps {
		path := fmt.Sprintf("transform[%d]", i)
		if st.Filter != nil {
			check(path+".filter", *st.Filter, st.Pos)
		}
		for _, a := range st.Set {
			check(path+".set."+a.Field, a.Expr, st.Pos)
		}
		if st.Route != nil {
			for j, ru := range st.Route.Rules {
				if ru.When != nil {
					pos := ru.Pos
					if pos.Line == 0 {
						pos = st.Pos
					}
					check(fmt.Sprintf("%s.route.rules[%d].when", path, j), *ru.When, pos)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkCalls returns the first call of a function that does not exist or
// is not allowed.
func checkCalls(tree ast.Node) *exprError {
	v := &callChecker{}
	ast.Walk(&tree, v)
	return v.err
}

type callChecker struct{ err *exprError }

func (v *callChecker) Visit(n *ast.Node) {
	if v.err != nil {
		return
	}
	var name string
	switch c := (*n).(type) {
	case *ast.BuiltinNode:
		name = c.Name
	case *ast.CallNode:
		id, ok := c.Callee.(*ast.IdentifierNode)
		if !ok {
			return
		}
		name = id.Value
	default:
		return
	}
	if real, ok := aliasOf[name]; ok {
		name = real
	}
	if why, ok := forbidden[name]; ok {
		v.err = errAt(*n, "%s", why)
		return
	}
	if _, ok := funcs[name]; !ok {
		v.err = errAt(*n, "unknown function %s%s", name, didYouMean(name, funcNames()))
	}
}
