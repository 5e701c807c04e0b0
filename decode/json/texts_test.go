package json

import (
	"errors"
	"testing"

	"github.com/etl-project/etl/decode"
)

// TestStringFamilyRefusals: a value the string-family types refuse gets
// the reason and the words of its type.
func TestStringFamilyRefusals(t *testing.T) {
	for _, tc := range []struct {
		typ, value string
		reason     decode.Reason
		msg        string
	}{
		{"FixedString(3)", `"abcd"`, decode.ReasonOutOfRange, `value "abcd" is longer than 3 bytes`},
		{"FixedString(3)", `12`, decode.ReasonWrongType, `value 12 is a number, want a string`},
		{"UUID", `"not-a-uuid"`, decode.ReasonWrongType, `value "not-a-uuid" is not a UUID`},
		{"UUID", `1`, decode.ReasonWrongType, `value 1 is a number, want a string`},
		{"IPv4", `"1.2.3"`, decode.ReasonWrongType, `value "1.2.3" is not an IPv4 address`},
		{"IPv4", `"::1"`, decode.ReasonWrongType, `value "::1" is not an IPv4 address`},
		{"IPv4", `5000000000`, decode.ReasonOutOfRange, `value 5000000000 out of range`},
		{"IPv4", `-1`, decode.ReasonOutOfRange, `value -1 out of range`},
		{"IPv4", `true`, decode.ReasonWrongType, `value true is a boolean, want a string`},
		{"IPv6", `"fe80::1%eth0"`, decode.ReasonWrongType, `value "fe80::1%eth0" is not an IP address`},
		{"IPv6", `7`, decode.ReasonWrongType, `value 7 is a number, want a string`},
		{"Enum8('a' = 1)", `"b"`, decode.ReasonOutOfRange, `value "b" is not a value of the enum`},
	} {
		s := schemaOf(t, "v "+tc.typ)
		d, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Decode([]byte(`{"v":`+tc.value+`}`), newChunk(t, s))
		var de *decode.Error
		if !errors.As(err, &de) {
			t.Errorf("%s %s: %v, want a decode error", tc.typ, tc.value, err)
			continue
		}
		if de.Reason != tc.reason || de.Err.Error() != tc.msg {
			t.Errorf("%s %s: %s %q, want %s %q", tc.typ, tc.value, de.Reason, de.Err, tc.reason, tc.msg)
		}
	}
}
