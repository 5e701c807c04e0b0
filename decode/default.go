package decode

import (
	"fmt"

	"github.com/etl-project/etl/chunk"
)

// Defaulter appends a type's default for a null or missing value; nil
// means the column's AppendDefault is right.
type Defaulter func(col chunk.Column)

// AppendDefault appends the default def (see Defaulter) to col.
func AppendDefault(def Defaulter, col chunk.Column) {
	if def != nil {
		def(col)
		return
	}
	col.AppendDefault()
}

// Default returns the Defaulter of type t, what both decoders append for
// a missing value, and the error for a type no decoder takes (an Enum
// without values, a Map whose keys cannot be decoded). The Defaulter is
// nil: a column's AppendDefault appends the table's DEFAULT when the type
// carries one (chunk.Type.HasDefault), else the type's own default, which
// chunk owns (chunk.Column.AppendDefault).
func Default(t *chunk.Type) (Defaulter, error) {
	def, err := typeDefault(t)
	if t.HasDefault() {
		def = nil
	}
	return def, err
}

func typeDefault(t *chunk.Type) (Defaulter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return nil, fmt.Errorf("type %s has no values", t.Name)
		}
		return nil, nil
	case chunk.KindNullable:
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	case chunk.KindArray:
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	case chunk.KindTuple:
		for _, et := range t.Elems {
			if _, err := Default(et); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case chunk.KindMap:
		if err := mapKeyDecodable(t.Key); err != nil {
			return nil, err
		}
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if _, err := chunk.NewColumn(t); err != nil {
		return nil, err
	}
	// A scalar: the column's AppendDefault appends the type's default.
	return nil, nil
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
	_, err := Default(t)
	return err
}
