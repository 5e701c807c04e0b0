package avro

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	havro "github.com/hamba/avro/v2"
)

// Column is a column a table needs to hold a field of an Avro record
// schema, as Columns derives it.
type Column struct {
	Name string
	// Type is the ClickHouse type (FieldTypes' mapping); "" when the field
	// has none, and Note says why.
	Type string
	// Group is the array of records whose element field this is
	// ("events" for "events.kind Array(String)"): one Nested structure.
	Group string
	// Default is the field's Avro default as a ClickHouse literal, for
	// scalar fields that have one.
	Default string
	Note    string
}

// Columns lists, in the schema's order, the columns that hold the fields
// of an Avro record schema: a field of a scalar, array or map type is one
// column; a record is one Tuple column; an array of records is one Array
// column per field of its elements, in Nested layout ("events.kind"). It
// also returns FieldTypes' map, which types the fields of records ("a.b")
// that the transform chain may read.
func Columns(schema string) ([]Column, map[string]string, error) {
	s, err := havro.ParseWithCache(schema, "", &havro.SchemaCache{})
	if err != nil {
		return nil, nil, err
	}
	rec, ok := deref(s).(*havro.RecordSchema)
	if !ok {
		return nil, nil, fmt.Errorf("avro: the schema is a %s, not a record", s.Type())
	}
	all := map[string]string{}
	addRecordFields(rec, "", false, all, 0)
	var cols []Column
	for _, f := range rec.Fields() {
		name := f.Name()
		t, nullable, why := unnull(f.Type())
		if why != "" {
			cols = append(cols, Column{Name: name, Note: why})
			continue
		}
		if a, ok := t.(*havro.ArraySchema); ok {
			if r, ok := deref(a.Items()).(*havro.RecordSchema); ok {
				for _, ef := range r.Fields() {
					ct, why := memberType(ef.Type(), 0)
					c := Column{Name: name + "." + ef.Name(), Group: name, Note: why}
					if why == "" {
						c.Type = "Array(" + ct + ")"
					}
					cols = append(cols, c)
				}
				continue
			}
		}
		ct, why := memberType(t, 0)
		if why != "" {
			cols = append(cols, Column{Name: name, Note: why})
			continue
		}
		if nullable && canBeNullable(ct) {
			ct = "Nullable(" + ct + ")"
		}
		cols = append(cols, Column{Name: name, Type: ct, Default: defaultLiteral(f, t)})
	}
	return cols, all, nil
}

// unnull unwraps [null, T] into T.
func unnull(s havro.Schema) (havro.Schema, bool, string) {
	s = deref(s)
	u, ok := s.(*havro.UnionSchema)
	if !ok {
		return s, false, ""
	}
	var other []havro.Schema
	null := false
	for _, m := range u.Types() {
		if m.Type() == havro.Null {
			null = true
		} else {
			other = append(other, deref(m))
		}
	}
	if len(other) != 1 {
		return nil, false, fmt.Sprintf("a union of %d non-null types has no ClickHouse type", len(other))
	}
	return other[0], null, ""
}

func canBeNullable(ct string) bool {
	return !strings.HasPrefix(ct, "Array(") && !strings.HasPrefix(ct, "Map(") && !strings.HasPrefix(ct, "Tuple(")
}

// memberType is the ClickHouse type of values of Avro type s: records
// are Tuples.
func memberType(s havro.Schema, depth int) (string, string) {
	if depth > 32 {
		return "", "a recursive record has no ClickHouse type"
	}
	t, nullable, why := unnull(s)
	if why != "" {
		return "", why
	}
	var ct string
	switch x := t.(type) {
	case *havro.RecordSchema:
		parts := make([]string, 0, len(x.Fields()))
		for _, f := range x.Fields() {
			m, why := memberType(f.Type(), depth+1)
			if why != "" {
				return "", fmt.Sprintf("field %s: %s", f.Name(), why)
			}
			parts = append(parts, m)
		}
		if len(parts) == 0 {
			return "", "a record without fields has no ClickHouse type"
		}
		ct = "Tuple(" + strings.Join(parts, ", ") + ")"
	case *havro.ArraySchema:
		e, why := memberType(x.Items(), depth+1)
		if why != "" {
			return "", why
		}
		ct = "Array(" + e + ")"
	case *havro.MapSchema:
		v, why := memberType(x.Values(), depth+1)
		if why != "" {
			return "", why
		}
		ct = "Map(String, " + v + ")"
	default:
		ct = chType(t)
		if ct == "" {
			return "", fmt.Sprintf("Avro type %s has no ClickHouse type", typeName(t))
		}
	}
	if nullable && canBeNullable(ct) {
		ct = "Nullable(" + ct + ")"
	}
	return ct, ""
}

// defaultLiteral is f's default, for a scalar field, as a ClickHouse
// literal; "" when it has none or it is null.
func defaultLiteral(f *havro.Field, t havro.Schema) string {
	if !f.HasDefault() {
		return ""
	}
	if _, ok := t.(havro.LogicalTypeSchema); ok {
		if l := t.(havro.LogicalTypeSchema).Logical(); l != nil {
			return ""
		}
	}
	switch v := f.Default().(type) {
	case bool:
		if v {
			return "1"
		}
		return "0"
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float32:
		return floatLiteral(float64(v))
	case float64:
		if _, ok := t.(*havro.PrimitiveSchema); ok && (t.Type() == havro.Int || t.Type() == havro.Long) {
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				return strconv.FormatInt(int64(v), 10)
			}
			return ""
		}
		return floatLiteral(v)
	case string:
		if _, ok := t.(*havro.PrimitiveSchema); ok && t.Type() == havro.String {
			return quoteString(v)
		}
		if _, ok := t.(*havro.EnumSchema); ok {
			return quoteString(v)
		}
	}
	return ""
}

func floatLiteral(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// quoteString is a ClickHouse string literal.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
