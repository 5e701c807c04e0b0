package json

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/decode"
)

// newError returns an error about value v: "value <v> <what>".
func newError(r decode.Reason, v *fastjson.Value, what string) *decode.Error {
	return &decode.Error{Reason: r, Err: errors.New("value " + shown(v) + " " + what)}
}

func wrongType(v *fastjson.Value, want string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonWrongType,
		Err: fmt.Errorf("value %s is %s, want %s", shown(v), article(v.Type()), want)}
}

func article(t fastjson.Type) string {
	switch t {
	case fastjson.TypeObject, fastjson.TypeArray:
		return "an " + t.String()
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "a boolean"
	}
	return "a " + t.String()
}

// shown is the JSON text of v, cut to decode.MaxShown bytes.
func shown(v *fastjson.Value) string {
	b := v.MarshalTo(nil)
	if len(b) <= decode.MaxShown {
		return string(b)
	}
	n := decode.MaxShown
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "..."
}
