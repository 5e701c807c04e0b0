package decode

import (
	"fmt"
	"math"
	"net/netip"
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

// Ranges of Date32 and DateTime64. DateTime64 ends where the driver, which
// carries every value through nanoseconds since the epoch, can go no
// further.
const (
	MinDate32     = -25567 // 1900-01-01
	MaxDate32     = 120529 // 2299-12-31
	MinDateTime64 = -2208988800
	MaxDateTime64 = math.MaxInt64 / 1e9 // 2262-04-11T23:47:16Z, plus a fraction
)

// Pow10 holds 10^0..10^9 (DateTime64 ticks per second by precision).
var Pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// DateTime64Range returns the smallest and largest ticks of DateTime64(p).
func DateTime64Range(p int) (lo, hi int64) {
	return MinDateTime64 * Pow10[p], math.MaxInt64 / Pow10[9-p]
}

// IPv4Number is the UInt32 an IPv4 column holds for address a.
func IPv4Number(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// IsUUID reports whether b is in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// of hex digits.
func IsUUID(b []byte) bool {
	if len(b) != 36 || b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return false
	}
	var bad uint8
	for _, g := range [...][]byte{b[0:8], b[9:13], b[14:18], b[19:23], b[24:36]} {
		for _, c := range g {
			bad |= notHex[c]
		}
	}
	return bad == 0
}

// notHex[c] is 1 unless c is a hex digit.
var notHex = func() (t [256]uint8) {
	for c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			t[c] = 1
		}
	}
	return t
}()

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
