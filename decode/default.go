package decode

import (
	"fmt"

	"github.com/etl-project/etl/chunk"
)

// Defaulter appends what a null or missing value gives where that is not
// the column's default (a NULL kept in a Nullable column with a DEFAULT, an
// element appended to an Array's elements); nil means the column's
// AppendDefault is right.
type Defaulter func(col chunk.Column)

// AppendDefault appends the default def (see Defaulter) to col.
func AppendDefault(def Defaulter, col chunk.Column) {
	if def != nil {
		def(col)
		return
	}
	col.AppendDefault()
}

// Check returns the error for a type no decoder takes: an Enum without
// values, a Map whose keys cannot be decoded, a type chunk has no column
// for. A missing value appends the column's default (chunk.Column.
// AppendDefault: the table's DEFAULT when the type carries one, else the
// type's own, which chunk owns).
func Check(t *chunk.Type) error {
	t = t.Base()
	switch t.Kind {
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return fmt.Errorf("type %s has no values", t.Name)
		}
		return nil
	case chunk.KindNullable, chunk.KindArray:
		return Check(t.Elem)
	case chunk.KindTuple:
		for _, et := range t.Elems {
			if err := Check(et); err != nil {
				return err
			}
		}
		return nil
	case chunk.KindMap:
		if err := mapKeyDecodable(t.Key); err != nil {
			return err
		}
		return Check(t.Elem)
	}
	_, err := chunk.NewColumn(t)
	return err
}

// mapKeyDecodable returns the error for a Map key type the decoders do
// not take: a composite type, or one whose values cannot be decoded.
func mapKeyDecodable(t *chunk.Type) error {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return nil
	case chunk.KindNullable, chunk.KindArray, chunk.KindMap, chunk.KindTuple:
		return fmt.Errorf("map key type %s is not supported", t.Name)
	}
	return Check(t)
}
