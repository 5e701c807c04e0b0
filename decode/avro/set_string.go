package avro

import (
	"fmt"
	"strconv"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setString stores a string or bytes in a String column.
func setString(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	chunk.AppendString(col, b)
	return nil
}

// setFixed stores a fixed of n bytes in a String or FixedString column
// (whose size the schema's compilation checked).
func setFixed(a chunk.Texts, n int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.fixed(n)
		if e != nil {
			return e
		}
		_ = a.AppendBytes(col, b) // n fits the column
		return nil
	}
}

// setText stores a string (or bytes) in a column of the string family; a
// value the type refuses comes back with the type's words for why
// (chunk.Texts.Refusal): ErrRange as out_of_range, ErrSyntax as wrong_type.
func setText(a chunk.Texts) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.bytes()
		if e != nil {
			return e
		}
		switch err := a.AppendText(col, b); err {
		case nil:
			return nil
		case chunk.ErrRange:
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %s is %s", decode.Quote(b), a.Refusal(err))}
		default:
			return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is %s", decode.Quote(b), a.Refusal(err))}
		}
	}
}

// setEnum appends the symbol of an enum index to a String or Enum column
// (which refuses a symbol that is not one of its names).
func setEnum(a chunk.Texts, syms []string) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= int64(len(syms)) {
			return r.corrupt(fmt.Sprintf("enum index %d of %d", i, len(syms)))
		}
		if a.AppendString(col, syms[i]) != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", strconv.Quote(syms[i]))}
		}
		return nil
	}
}
