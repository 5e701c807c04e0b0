package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/etl-project/etl/internal/names"
)

type mark struct{ line, col int }

// decoder walks a yaml.Node tree into a Config by reflection, keyed on the
// yaml struct tags. Unlike yaml.Unmarshal it keeps going after a problem,
// so every problem in the file is reported, and it records where each key
// path appeared so that validation can point at it.
type decoder struct {
	file string
	errs []*Error
	keys map[string]mark // position of the key that introduced a path
	vals map[string]mark // position of the value at a path
	bad  map[string]bool // paths whose value failed to decode
}

func newDecoder(file string) *decoder {
	return &decoder{
		file: file,
		keys: map[string]mark{},
		vals: map[string]mark{},
		bad:  map[string]bool{},
	}
}

func (d *decoder) add(line, col int, path, msg string) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Path: path, Msg: msg})
}

// fail reports a value that could not be decoded; validation then skips
// the path and everything below it.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.add(n.Line, n.Column, path, fmt.Sprintf(format, args...))
	d.bad[path] = true
}

var (
	durationType    = reflect.TypeFor[Duration]()
	byteSizeType    = reflect.TypeFor[ByteSize]()
	exprType        = reflect.TypeFor[Expr]()
	posType         = reflect.TypeFor[Pos]()
	assignmentsType = reflect.TypeFor[[]Assignment]()
)

// defaulter is a list element or map value that starts from defaults
// rather than zero before it is decoded.
type defaulter interface{ setDefaults() }

// knownTags are the scalar tags yaml.v3 resolves; explicit custom tags
// such as !foo are rejected.
var knownTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true,
	"!!null": true, "!!timestamp": true, "!!binary": true,
}

// decode stores n into v. A null value leaves v unchanged, so it keeps its
// default.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.vals[path] = mark{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode && !knownTags[n.Tag] {
		d.fail(n, path, "unsupported YAML tag %s", n.Tag)
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}

	switch v.Type() {
	case exprType, reflect.PointerTo(exprType):
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			d.fail(n, path, "expected an expression (a string), got %s", describe(n))
			return
		}
		e := Expr{Text: n.Value, Pos: d.pos(n)}
		if v.Kind() == reflect.Pointer {
			v.Set(reflect.ValueOf(&e))
		} else {
			v.Set(reflect.ValueOf(e))
		}
		return
	case assignmentsType:
		d.decodeAssignments(n, v, path)
		return
	case durationType:
		if x, msg := parseDuration(n); msg != "" {
			d.fail(n, path, "%s", msg)
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return
	case byteSizeType:
		if x, msg := parseByteSize(n); msg != "" {
			d.fail(n, path, "%s", msg)
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return
	}

	switch v.Kind() {
	case reflect.Pointer:
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "expected a mapping, got %s", describe(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeList(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.fail(n, path, "expected an integer, got %s", describe(n))
			return
		}
		x, err := strconv.ParseInt(n.Value, 0, strconv.IntSize)
		if err != nil {
			d.fail(n, path, "integer %s is out of range", n.Value)
			return
		}
		v.SetInt(x)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		x, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(x)
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		v.SetFloat(x)
	default:
		// Only reachable if a field of an unsupported type is added to Config.
		d.fail(n, path, "internal error: cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	t := v.Type()
	names := make([]string, 0, t.NumField())
	index := make([]int, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == posType && yamlName(f) == "-" {
			v.Field(i).Set(reflect.ValueOf(d.pos(n)))
			continue
		}
		names = append(names, yamlName(f))
		index = append(index, i)
	}
	seen := map[string]int{}
	forEachPair(n, func(k, val *yaml.Node) {
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "keys must be strings, got %s", describe(k))
			return
		}
		child := joinPath(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.add(k.Line, k.Column, child, fmt.Sprintf("duplicate key %q (first defined at line %d)", k.Value, line))
			return
		}
		seen[k.Value] = k.Line
		idx := -1
		for i, name := range names {
			if name == k.Value {
				idx = index[i]
				break
			}
		}
		if idx < 0 {
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := suggest(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.add(k.Line, k.Column, child, msg+"; allowed keys: "+strings.Join(names, ", "))
			return
		}
		d.keys[child] = mark{k.Line, k.Column}
		d.decode(val, v.Field(idx), child)
	})
}

// decodeList decodes a list of strings. Elements must be non-empty.
func (d *decoder) decodeList(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		e := reflect.New(v.Type().Elem()).Elem()
		if df, ok := e.Addr().Interface().(defaulter); ok {
			df.setDefaults()
		}
		d.keys[p] = mark{item.Line, item.Column}
		d.decode(item, e, p)
		if e.Kind() == reflect.String && e.String() == "" && !d.bad[p] {
			d.fail(item, p, "must not be empty")
		}
		out = reflect.Append(out, e)
	}
	v.Set(out)
}

// decodeMap decodes map[string]string (non-empty values) and
// map[string]any (scalar values only).
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	forEachPair(n, func(k, val *yaml.Node) {
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.fail(k, path, "keys must be non-empty strings, got %s", describe(k))
			return
		}
		child := joinPath(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.add(k.Line, k.Column, child, fmt.Sprintf("duplicate key %q (first defined at line %d)", k.Value, line))
			return
		}
		seen[k.Value] = k.Line
		d.keys[child] = mark{k.Line, k.Column}
		for val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		d.vals[child] = mark{val.Line, val.Column}
		var x any
		if et := v.Type().Elem(); et.Kind() == reflect.Pointer && et.Elem().Kind() == reflect.Struct {
			e := reflect.New(et.Elem())
			if df, ok := e.Interface().(defaulter); ok {
				df.setDefaults()
			}
			d.decode(val, e.Elem(), child)
			out.SetMapIndex(reflect.ValueOf(k.Value), e)
			return
		}
		if v.Type().Elem().Kind() == reflect.Interface {
			var ok bool
			if x, ok = scalarValue(val); !ok {
				d.fail(val, child, "setting values must be scalars (integer, number, boolean or string), got %s", describe(val))
				return
			}
		} else {
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" || val.Value == "" {
				d.fail(val, child, "expected a non-empty string, got %s", describe(val))
				return
			}
			x = val.Value
		}
		out.SetMapIndex(reflect.ValueOf(k.Value), reflect.ValueOf(x).Convert(v.Type().Elem()))
	})
	if out.Len() == 0 {
		v.SetZero() // an empty mapping means the same as none
		return
	}
	v.Set(out)
}

// scalarValue converts a scalar node to int64, float64, bool or string.
func scalarValue(n *yaml.Node) (any, bool) {
	if n.Kind != yaml.ScalarNode {
		return nil, false
	}
	switch n.Tag {
	case "!!int":
		x, err := strconv.ParseInt(n.Value, 0, 64)
		return x, err == nil
	case "!!float":
		x, err := strconv.ParseFloat(n.Value, 64)
		return x, err == nil
	case "!!bool":
		x, err := strconv.ParseBool(strings.ToLower(n.Value))
		return x, err == nil
	case "!!str", "!!timestamp":
		return n.Value, true
	}
	return nil, false
}

func forEachPair(n *yaml.Node, f func(k, v *yaml.Node)) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		f(n.Content[i], n.Content[i+1])
	}
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// suggest returns the candidate closest to key when it is close enough to
// be a likely typo, or "".
func suggest(key string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		dist := names.Distance(strings.ToLower(key), c)
		if dist < bestDist && dist*3 <= len(c) {
			best, bestDist = c, dist
		}
	}
	return best
}

// pos is n's position in the file.
func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Column: n.Column} }

// decodeAssignments decodes a set step's mapping (field: expression),
// keeping the order of the file: later assignments may read earlier ones.
func (d *decoder) decodeAssignments(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping of field: expression, got %s", describe(n))
		return
	}
	var out []Assignment
	seen := map[string]int{}
	forEachPair(n, func(k, val *yaml.Node) {
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.fail(k, path, "keys must be non-empty field names, got %s", describe(k))
			return
		}
		child := joinPath(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.add(k.Line, k.Column, child, fmt.Sprintf("duplicate key %q (first defined at line %d)", k.Value, line))
			return
		}
		seen[k.Value] = k.Line
		d.keys[child] = mark{k.Line, k.Column}
		d.vals[child] = mark{val.Line, val.Column}
		if val.Kind != yaml.ScalarNode || val.Value == "" {
			d.fail(val, child, "expected an expression (a string), got %s", describe(val))
			return
		}
		out = append(out, Assignment{Field: k.Value, Expr: Expr{Text: val.Value, Pos: d.pos(val)}})
	})
	v.Set(reflect.ValueOf(out))
}
