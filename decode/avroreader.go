package decode

import (
	"encoding/json"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
)

// readerView is what a reader schema changes in decoding a writer's
// records: writer fields are renamed to the reader's field (by name or by
// one of the reader field's aliases), writer fields the reader lacks are
// ignored, and reader fields the writer lacks take the reader's default.
type readerView struct {
	fields   map[string]*avro.Field // reader field by name and by alias
	defaults map[string]any         // reader field name -> default, for fields with one
}

func newReaderView(text string) (*readerView, error) {
	rs, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("decode: avro reader schema: %w", err)
	}
	rec, ok := avroDeref(rs).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("decode: avro reader schema is %s, want a record", avroTypeName(rs))
	}
	v := &readerView{fields: map[string]*avro.Field{}, defaults: map[string]any{}}
	for _, f := range rec.Fields() {
		v.fields[f.Name()] = f
		for _, a := range f.Aliases() {
			v.fields[a] = f
		}
		if f.HasDefault() {
			v.defaults[f.Name()] = f.Default()
		}
	}
	return v, nil
}

// rewriteWriter returns the writer schema with its top-level fields renamed
// to the reader's names, and the fields the reader lacks renamed so that no
// column can match them (their values are skipped). Renaming does not
// change the binary encoding. It also returns the reader fields the writer
// has.
func (v *readerView) rewriteWriter(writer string) (string, map[string]bool, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(writer), &doc); err != nil {
		return "", nil, fmt.Errorf("decode: avro writer schema: %w", err)
	}
	fields, ok := doc["fields"].([]any)
	if !ok {
		return "", nil, fmt.Errorf("decode: avro writer schema has no record fields")
	}
	have := map[string]bool{}
	for i, f := range fields {
		m, ok := f.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("decode: avro writer schema field %d is not an object", i)
		}
		name, _ := m["name"].(string)
		if rf, ok := v.fields[name]; ok {
			m["name"] = rf.Name()
			have[rf.Name()] = true
		} else {
			m["name"] = fmt.Sprintf("etl_ignored_%d", i)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return "", nil, err
	}
	return string(out), have, nil
}

// readerDefault is a reader default ready to append to a column: its JSON
// form, parsed once and set with the JSON decoder's setter for the column
// type.
type readerDefault struct {
	set setter
	val *fastjson.Value
	jd  *JSON // scratch for the setter; the parsed value lives in jd.p
}

func newReaderDefault(t *chunk.Type, def any) (*readerDefault, error) {
	if def == nil {
		return nil, nil // a null default is the column's own default
	}
	b, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	set, _, err := compile(t)
	if err != nil {
		return nil, err
	}
	rd := &readerDefault{set: set, jd: &JSON{}}
	if rd.val, err = rd.jd.p.ParseBytes(b); err != nil {
		return nil, err
	}
	// Check it once: a default that cannot go into the column is a
	// configuration error, not a per-record one.
	col, err := chunk.NewColumn(t)
	if err != nil {
		return nil, err
	}
	if e := rd.set(rd.jd, rd.val, col); e != nil {
		return nil, e.Err
	}
	return rd, nil
}
