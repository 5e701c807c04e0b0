package avro

import (
	"encoding/json"
	"fmt"

	havro "github.com/hamba/avro/v2"
)

// DebeziumValue returns the row record of a Debezium change event's
// schema, as the AvroConverter writes it: the writer schema is a record
// (<server>.<schema>.<table>.Envelope) whose field after is a
// ["null", Value] union, Value the source table's row. It returns Value's
// schema as JSON text, for deriving the table's columns and typing the
// row's fields (schema.FromAvro, FieldTypes) as for a plain record.
func DebeziumValue(envelope string) (string, error) {
	s, err := havro.ParseWithCache(envelope, "", &havro.SchemaCache{})
	if err != nil {
		return "", fmt.Errorf("avro: the change event's schema: %w", err)
	}
	rec, ok := deref(s).(*havro.RecordSchema)
	if !ok {
		return "", fmt.Errorf("avro: the change event's schema is a %s, not a record", s.Type())
	}
	var after *havro.Field
	for _, f := range rec.Fields() {
		if f.Name() == "after" {
			after = f
		}
	}
	if after == nil {
		return "", fmt.Errorf("avro: schema %s is not a Debezium change event's: it has no field after", rec.FullName())
	}
	row, _, _ := recordOf(avroDeref(after.Type()))
	if row == nil {
		return "", fmt.Errorf("avro: field after of %s is %s, not a [null, record] union", rec.FullName(), typeName(after.Type()))
	}
	b, err := json.Marshal(row)
	if err != nil {
		return "", fmt.Errorf("avro: the row record %s: %w", row.FullName(), err)
	}
	return string(b), nil
}
