package decode

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The value checks and message parts both decoders share.

// TupleLabel names element i of a tuple in messages: its name, or its
// position from 1 as ClickHouse counts them.
func TupleLabel(names []string, i int) string {
	if names != nil {
		return fmt.Sprintf("tuple element %q", names[i])
	}
	return fmt.Sprintf("tuple element %d", i+1)
}

// How a value out of a date type's range is described in messages.
const (
	NotDateTime   = "is not a date-time from 1970-01-01T00:00:00Z on"
	NotDate       = "is not a date from 1970-01-01 on"
	NotDate32     = "is not a date in 1900-01-01..2299-12-31"
	NotDateTime64 = "is not a date-time in 1900-01-01T00:00:00Z..2262-04-11T23:47:16.854775807Z"
)

// MaxShown is how many bytes of an offending value an error quotes.
const MaxShown = 64

// Pow10 holds 10^0..10^9 (DateTime64 ticks per second by precision).
var Pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// Quote quotes a string value for messages, cut to MaxShown bytes.
func Quote(b []byte) string {
	if len(b) <= MaxShown {
		return strconv.Quote(string(b))
	}
	n := MaxShown
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strconv.Quote(string(b[:n])) + "..."
}
