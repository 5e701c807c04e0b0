package transform

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
)

// parseExpr parses text with expr's parser.
func parseExpr(text string) (ast.Node, *exprError) {
	if strings.TrimSpace(text) == "" {
		return nil, &exprError{pos: -1, msg: "empty expression"}
	}
	tree, err := parser.Parse(rewriteOpCalls(text))
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, &exprError{pos: fe.From, msg: "syntax error: " + fe.Message}
		}
		return nil, &exprError{pos: -1, msg: "syntax error: " + err.Error()}
	}
	return tree.Node, nil
}

// opFuncs are operator keywords also callable as functions, with the
// alias (of the same length, so positions do not move) the call is
// rewritten to before parsing: expr's lexer reads matches( as the
// operator.
var opFuncs = map[string]string{
	"matches":    "mAtches",
	"contains":   "cOntains",
	"startsWith": "sTartsWith",
	"endsWith":   "eNdsWith",
}

// aliasOf maps an alias of opFuncs back to its function.
var aliasOf = func() map[string]string {
	m := map[string]string{}
	for f, a := range opFuncs {
		m[a] = f
	}
	return m
}()

// rewriteOpCalls rewrites matches(, contains(, startsWith( and endsWith(
// where an operand is expected (so they cannot be the binary operators)
// into calls of their aliases.
func rewriteOpCalls(text string) string {
	toks, err := lexer.Lex(file.NewSource(text))
	if err != nil {
		return text
	}
	var out []byte
	for i, tk := range toks {
		alias, ok := opFuncs[tk.Value]
		if !ok || tk.Kind != lexer.Operator || i+1 >= len(toks) || !toks[i+1].Is(lexer.Bracket, "(") {
			continue
		}
		if i > 0 && operandEnd(toks[i-1]) {
			continue
		}
		if i > 1 && toks[i-1].Is(lexer.Operator, "not") && operandEnd(toks[i-2]) {
			continue // a not matches (b)
		}
		off := byteOffset(text, tk.From)
		if off < 0 || !strings.HasPrefix(text[off:], tk.Value) {
			continue
		}
		if out == nil {
			out = []byte(text)
		}
		copy(out[off:], alias)
	}
	if out == nil {
		return text
	}
	return string(out)
}

func operandEnd(t lexer.Token) bool {
	switch t.Kind {
	case lexer.Identifier, lexer.Number, lexer.String, lexer.Bytes:
		return true
	}
	return t.Is(lexer.Bracket, ")", "]", "}")
}

// byteOffset converts a rune offset into a byte offset, -1 past the end.
func byteOffset(text string, runes int) int {
	n := 0
	for i := range text {
		if n == runes {
			return i
		}
		n++
	}
	if n == runes {
		return len(text)
	}
	return -1
}

func errAt(n ast.Node, format string, args ...any) *exprError {
	return &exprError{pos: startPos(n), msg: fmt.Sprintf(format, args...)}
}

// startPos is the position where n's text starts, as near as the AST
// tells: the leftmost operand of an operator, the first name of a.b.c.
func startPos(n ast.Node) int {
	switch n := n.(type) {
	case *ast.MemberNode:
		if _, ok := dotted(n); ok {
			return startPos(n.Node)
		}
	case *ast.BinaryNode:
		return startPos(n.Left)
	case *ast.ConditionalNode:
		return startPos(n.Cond)
	}
	if n == nil {
		return -1
	}
	return n.Location().From
}

// dotted returns the field name a.b.c that an identifier or a chain of
// plain member accesses spells.
func dotted(n ast.Node) (string, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return n.Value, true
	case *ast.MemberNode:
		p, ok := n.Property.(*ast.StringNode)
		if !ok || n.Optional || n.Method {
			return "", false
		}
		base, ok := dotted(n.Node)
		if !ok {
			return "", false
		}
		return base + "." + p.Value, true
	}
	return "", false
}

// describe names an operand in messages: a field by its name, else "the
// operand".
func describe(n ast.Node) string {
	if name, ok := dotted(n); ok {
		return fmt.Sprintf("field %q", name)
	}
	switch n := n.(type) {
	case *ast.BuiltinNode:
		return n.Name + "(...)"
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			return id.Value + "(...)"
		}
	}
	return "the operand"
}
