package avro

import (
	"fmt"
	"strings"

	havro "github.com/hamba/avro/v2"
)

// FieldTypes maps every field of an Avro record schema that a column
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
func FieldTypes(schema string) (map[string]string, error) {
	s, err := havro.ParseWithCache(schema, "", &havro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	rec, ok := deref(s).(*havro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro: the schema is a %s, not a record", s.Type())
	}
	out := map[string]string{}
	addRecordFields(rec, "", false, out, 0)
	return out, nil
}

func deref(s havro.Schema) havro.Schema {
	if r, ok := s.(*havro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// addRecordFields adds the fields of rec under prefix; inArray wraps their
// types in Array (fields of the elements of an array of records).
func addRecordFields(rec *havro.RecordSchema, prefix string, inArray bool, out map[string]string, depth int) {
	if depth > 32 {
		return // a recursive schema: deeper fields are not typed
	}
	for _, f := range rec.Fields() {
		name := prefix + f.Name()
		t, nullable, why := unnull(f.Type())
		if why != "" {
			continue
		}
		switch x := t.(type) {
		case *havro.RecordSchema:
			addRecordFields(x, name+".", inArray, out, depth+1)
			continue
		case *havro.ArraySchema:
			if r, ok := deref(x.Items()).(*havro.RecordSchema); ok && !inArray {
				addRecordFields(r, name+".", true, out, depth+1)
				continue
			}
		}
		ct := chType(t)
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

// chType is the ClickHouse type of values of Avro type s, or "".
func chType(s havro.Schema) string {
	s = deref(s)
	var logical havro.LogicalSchema
	if l, ok := s.(havro.LogicalTypeSchema); ok {
		logical = l.Logical()
	}
	if logical != nil {
		switch logical.Type() {
		case havro.Decimal:
			if d, ok := logical.(*havro.DecimalLogicalSchema); ok {
				return fmt.Sprintf("Decimal(%d, %d)", d.Precision(), d.Scale())
			}
		case havro.UUID:
			return "UUID"
		case havro.Date:
			return "Date"
		case havro.TimestampMillis:
			return "DateTime64(3)"
		case havro.TimestampMicros:
			return "DateTime64(6)"
		}
	}
	switch x := s.(type) {
	case *havro.PrimitiveSchema:
		switch x.Type() {
		case havro.Boolean:
			return "Bool"
		case havro.Int:
			return "Int32"
		case havro.Long:
			return "Int64"
		case havro.Float:
			return "Float32"
		case havro.Double:
			return "Float64"
		case havro.String, havro.Bytes:
			return "String"
		}
	case *havro.EnumSchema:
		return "String"
	case *havro.FixedSchema:
		return fmt.Sprintf("FixedString(%d)", x.Size())
	case *havro.ArraySchema:
		if e := chType(x.Items()); e != "" {
			return "Array(" + e + ")"
		}
	case *havro.MapSchema:
		if v := chType(x.Values()); v != "" {
			return "Map(String, " + v + ")"
		}
	case *havro.UnionSchema:
		if t, null, why := unnull(x); why == "" {
			if e := chType(t); e != "" {
				if null && !strings.HasPrefix(e, "Array(") && !strings.HasPrefix(e, "Map(") {
					return "Nullable(" + e + ")"
				}
				return e
			}
		}
	}
	return ""
}
