package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/internal/names"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/transform"
)

// recordFields are the names the records' fields are known by before any
// record is read: those of the Avro schema every record is resolved to
// (the reader schema, or the one writer schema of schema_file), of the
// registry's latest schemas (validate -connect), or of decode.fields for
// JSON. Schemaless JSON (no decode.fields) has none: its fields are known
// only as records arrive, and a column they never fill is seen by
// etl_sink_defaulted_rows_total instead.
type recordFields struct {
	// from names the list in messages ("decode.fields", "the Avro schema
	// decode.avro.schema_file a.avsc").
	from string
	// names holds every field and every prefix of a dotted one ("user"
	// of "user.id": a record, or an array of records, that a Tuple or a
	// Nested structure takes whole).
	names map[string]bool
}

func newRecordFields(from string) *recordFields {
	return &recordFields{from: from, names: map[string]bool{}}
}

// add adds field name and its prefixes.
func (r *recordFields) add(name string) {
	for {
		r.names[name] = true
		i := strings.LastIndexByte(name, '.')
		if i <= 0 {
			return
		}
		name = name[:i]
	}
}

func (r *recordFields) has(name string) bool { return r.names[name] }

// sorted is every name, for did-you-mean.
func (r *recordFields) sorted() []string { return slices.Sorted(maps.Keys(r.names)) }

// avroRecordFields reads the fields of an Avro record schema: every
// top-level field (those without a ClickHouse type too) and every field of
// a nested record or of the elements of an array of records ("a.b").
func avroRecordFields(text, from string) (*recordFields, error) {
	cols, typed, err := avro.Columns(text)
	if err != nil {
		return nil, err
	}
	r := newRecordFields(from)
	for _, c := range cols {
		r.add(c.Name)
	}
	for f := range typed {
		r.add(f)
	}
	return r, nil
}

// sourceRecordFields reads the fields of what etl schema derives the
// tables from.
func sourceRecordFields(src schema.Source, from string) *recordFields {
	r := newRecordFields(from)
	for _, c := range src.Columns {
		r.add(c.Name)
	}
	for f := range src.Fields {
		r.add(f)
	}
	return r
}

// offlineRecordFields is what the configuration alone says of the records'
// fields: the reader schema, else schema_file (Avro framings raw and
// single_object), else decode.fields (JSON). nil when it says nothing
// (schemaless JSON, Avro with only the registry).
func offlineRecordFields(cfg *config.Config) (*recordFields, error) {
	if cfg.Decode.Format != config.FormatAvro {
		if len(cfg.Decode.Fields) == 0 {
			return nil, nil
		}
		r := newRecordFields("decode.fields")
		for f := range cfg.Decode.Fields {
			r.add(f)
		}
		return r, nil
	}
	a := cfg.Decode.Avro
	if rs := a.ReaderSchema; rs != "" {
		text, from := rs, "the reader schema decode.avro.reader_schema"
		if !strings.HasPrefix(strings.TrimSpace(rs), "{") {
			b, err := readFile(rs)
			if err != nil {
				return nil, err
			}
			text, from = b, from+" "+rs
		}
		return avroRecordFields(text, from)
	}
	if a.Framing != avro.FramingConfluent && a.SchemaFile != "" {
		b, err := readFile(a.SchemaFile)
		if err != nil {
			return nil, err
		}
		return avroRecordFields(b, "the Avro schema decode.avro.schema_file "+a.SchemaFile)
	}
	return nil, nil
}

// checkMappedFields checks every sink's sink.clickhouse.columns against
// the records' fields: a column mapped to a field no record has, and that
// the transform chain does not derive, would hold its default in every
// row. Each such entry is an error naming the field and the closest known
// one.
func checkMappedFields(cfg *config.Config, r *recordFields) []error {
	if r == nil {
		return nil
	}
	derived := map[string]bool{}
	for _, d := range transform.Derived(cfg.Transform) {
		derived[d] = true
	}
	var candidates []string
	var errs []error
	for _, ns := range cfg.SinkList() {
		ch := ns.ClickHouse
		if ch == nil {
			continue
		}
		for _, col := range slices.Sorted(maps.Keys(ch.Columns)) {
			field := ch.Columns[col]
			if r.has(field) || derived[field] {
				continue
			}
			if candidates == nil {
				candidates = append(r.sorted(), slices.Sorted(maps.Keys(derived))...)
			}
			msg := fmt.Sprintf("%s.columns.%s: field %q is not a field of the records: %s has no such field%s; column %s would hold its default in every row",
				cfg.KeyPath(ns), col, field, r.from, names.DidYouMean(field, candidates), col)
			if r.from == "decode.fields" {
				msg += " (with decode.fields, a field a column is mapped to must be declared there, with its type)"
			}
			errs = append(errs, fmt.Errorf("%s", msg))
		}
	}
	return errs
}

// checkExprFields checks the fields the transform chain's expressions read
// against the records' fields, when an Avro schema lists them all. With
// decode.fields it does not: a JSON field that goes unchanged into a
// column of its name need not be declared, and the tables are not known
// here (the chain is checked against them when it is compiled).
func checkExprFields(cfg *config.Config, r *recordFields) error {
	if r == nil || cfg.Decode.Format != config.FormatAvro || len(cfg.Transform) == 0 {
		return nil
	}
	return transform.UnknownFields(cfg.Transform, r.has, r.sorted(), r.from)
}

// CheckMapped checks every sink's sink.clickhouse.columns against src, the
// fields etl schema derives the tables from (SchemaSource): a *ConfigError
// for each column mapped to a field src does not have and the chain does
// not derive, with the closest field as a did-you-mean; nil when none is.
func CheckMapped(cfg *config.Config, src schema.Source) error {
	from := "decode.fields"
	if cfg.Decode.Format == config.FormatAvro {
		from = "the Avro schema"
	}
	if errs := checkMappedFields(cfg, sourceRecordFields(src, from)); len(errs) > 0 {
		return &ConfigError{Errs: errs}
	}
	return nil
}
