package avro

import (
	"fmt"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
)

// Levels of Options.Validate.
const (
	ValidateOff   = "off"
	ValidateNames = "names"
	ValidateFull  = "full"
)

// validate lists the mismatches between the writer's top-level fields
// (resolved to reader record rr, when not nil) and the table's columns
// that level does not allow.
func (b *avroBuilder) validate(level string, rec, rr *havro.RecordSchema, fields []string) []error {
	if level != ValidateNames && level != ValidateFull {
		return nil
	}
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
	}
	var out []error
	for i, f := range rec.Fields() {
		name := f.Name()
		if rr != nil {
			if resolved[i] == nil {
				continue // not in the reader schema: ignored on purpose
			}
			name = resolved[i].Name()
		}
		if len(b.byPath[name]) == 0 && !b.prefixes[name] {
			out = append(out, fmt.Errorf("field %q has no column", name))
		}
	}
	if level == ValidateFull {
		for i, t := range b.s.Types {
			// A column a reader default fills is used.
			if b.used[i] || t.Kind == chunk.KindNullable || fields[i] == "" {
				continue
			}
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field", b.s.Names[i], t.Name))
		}
		for _, u := range b.unfed {
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field of the records of %q", b.s.Names[u.col], b.s.Types[u.col].Name, u.array))
		}
	}
	return out
}
