package avro

import (
	"errors"
	"testing"

	"github.com/etl-project/etl/decode"
)

// TestAvroStringFamilyRefusals: a value the string-family types refuse
// gets the reason and the words of its type.
func TestAvroStringFamilyRefusals(t *testing.T) {
	for _, tc := range []struct {
		wtype, col string
		v          any
		reason     decode.Reason
		msg        string
	}{
		{`"string"`, "FixedString(3)", "abcd", decode.ReasonOutOfRange, `value "abcd" is longer than 3 bytes`},
		{`"bytes"`, "FixedString(2)", []byte("abc"), decode.ReasonOutOfRange, `value "abc" is longer than 2 bytes`},
		{`"string"`, "UUID", "nope", decode.ReasonWrongType, `value "nope" is not a UUID`},
		{`"string"`, "IPv4", "1.2.3", decode.ReasonWrongType, `value "1.2.3" is not an IPv4 address`},
		{`"string"`, "IPv6", "zz", decode.ReasonWrongType, `value "zz" is not an IP address`},
		{`"string"`, "Enum8('a' = 1)", "b", decode.ReasonOutOfRange, `value "b" is not a value of the enum`},
	} {
		schema := avroRecord(`v:` + tc.wtype)
		s := schemaOf(t, "v "+tc.col)
		a := avroNew(t, schema, s, Options{})
		_, err := a.Decode(avroMarshal(t, schema, map[string]any{"v": tc.v}), newChunk(t, s))
		var de *decode.Error
		if !errors.As(err, &de) {
			t.Errorf("%s -> %s %v: %v, want a decode error", tc.wtype, tc.col, tc.v, err)
			continue
		}
		if de.Reason != tc.reason || de.Err.Error() != tc.msg {
			t.Errorf("%s -> %s %v: %s %q, want %s %q", tc.wtype, tc.col, tc.v, de.Reason, de.Err, tc.reason, tc.msg)
		}
	}
}
