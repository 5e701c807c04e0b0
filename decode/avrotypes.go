package decode

import (
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// AvroFieldTypes maps every field of an Avro record schema that a column
// or an expression can read to the ClickHouse type its values take: "a"
// for a top-level field, "a.b" for field b of a nested record a, and for
// an array of records a, "a.b" as Array(T) (b of every element). Fields
// whose type has no ClickHouse equivalent (a union of several non-null
// types) are left out. It lets the transform chain type the fields it
// reads from the writer or reader schema instead of decode.fields.
//
//	boolean Bool, int Int32, long Int64, float Float32, double Float64,
//	string, bytes and enum String, fixed(n) FixedString(n), uuid UUID,
//	date Date, time-millis Int32, time-micros Int64,
//	timestamp-millis DateTime64(3), timestamp-micros DateTime64(6),
//	decimal(p, s) Decimal(p, s), [null, T] Nullable(T) (arrays and maps
//	stay Array and Map: they cannot be Nullable), array Array(T),
//	map Map(String, T).
func AvroFieldTypes(schema string) (map[string]string, error) {
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro: the schema is a %s, not a record", s.Type())
	}
	out := map[string]string{}
	addRecordFields(rec, "", false, out, 0)
	return out, nil
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// addRecordFields adds the fields of rec under prefix; inArray wraps their
// types in Array (fields of the elements of an array of records).
func addRecordFields(rec *avro.RecordSchema, prefix string, inArray bool, out map[string]string, depth int) {
	if depth > 32 {
		return // a recursive schema: deeper fields are not typed
	}
	for _, f := range rec.Fields() {
		name := prefix + f.Name()
		t := deref(f.Type())
		nullable := false
		if u, ok := t.(*avro.UnionSchema); ok {
			var other []avro.Schema
			for _, m := range u.Types() {
				if m.Type() == avro.Null {
					nullable = true
				} else {
					other = append(other, deref(m))
				}
			}
			if len(other) != 1 {
				continue
			}
			t = other[0]
		}
		switch x := t.(type) {
		case *avro.RecordSchema:
			addRecordFields(x, name+".", inArray, out, depth+1)
			continue
		case *avro.ArraySchema:
			if r, ok := deref(x.Items()).(*avro.RecordSchema); ok && !inArray {
				addRecordFields(r, name+".", true, out, depth+1)
				continue
			}
		}
		ct := avroCHType(t)
		if ct == "" {
			continue
		}
		if nullable && !strings.HasPrefix(ct, "Array(") && !strings.HasPrefix(ct, "Map(") {
			ct = "Nullable(" + ct + ")"
		}
		if inArray {
			ct = "Array(" + ct + ")"
		}
		out[name] = ct
	}
}

// avroCHType is the ClickHouse type of values of Avro type s, or "".
func avroCHType(s avro.Schema) string {
	s = deref(s)
	var logical avro.LogicalSchema
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		logical = l.Logical()
	}
	if logical != nil {
		switch logical.Type() {
		case avro.Decimal:
			if d, ok := logical.(*avro.DecimalLogicalSchema); ok {
				return fmt.Sprintf("Decimal(%d, %d)", d.Precision(), d.Scale())
			}
		case avro.UUID:
			return "UUID"
		case avro.Date:
			return "Date"
		case avro.TimestampMillis:
			return "DateTime64(3)"
		case avro.TimestampMicros:
			return "DateTime64(6)"
		}
	}
	switch x := s.(type) {
	case *avro.PrimitiveSchema:
		switch x.Type() {
		case avro.Boolean:
			return "Bool"
		case avro.Int:
			return "Int32"
		case avro.Long:
			return "Int64"
		case avro.Float:
			return "Float32"
		case avro.Double:
			return "Float64"
		case avro.String, avro.Bytes:
			return "String"
		}
	case *avro.EnumSchema:
		return "String"
	case *avro.FixedSchema:
		return fmt.Sprintf("FixedString(%d)", x.Size())
	case *avro.ArraySchema:
		if e := avroCHType(x.Items()); e != "" {
			return "Array(" + e + ")"
		}
	case *avro.MapSchema:
		if v := avroCHType(x.Values()); v != "" {
			return "Map(String, " + v + ")"
		}
	case *avro.UnionSchema:
		var other []avro.Schema
		null := false
		for _, m := range x.Types() {
			if m.Type() == avro.Null {
				null = true
			} else {
				other = append(other, m)
			}
		}
		if len(other) == 1 {
			if e := avroCHType(other[0]); e != "" {
				if null && !strings.HasPrefix(e, "Array(") && !strings.HasPrefix(e, "Map(") {
					return "Nullable(" + e + ")"
				}
				return e
			}
		}
	}
	return ""
}
