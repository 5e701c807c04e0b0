package chunk

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"unsafe"
)

// The string family: String, FixedString(N), UUID, Enum8 and Enum16
// (Strings, holding each value's text: FixedString's without its padding,
// which is the wire's; UUID's 36-character form; an Enum's name), IPv4
// (Fixed[uint32], the address as a big-endian number) and IPv6
// (Fixed[[16]byte]). LowCardinality of any of them is the same column as
// its element. Decoders, the transform and DEFAULT conversion convert
// values into these columns only through a Texts, which holds each type's
// checks, or, for String, which has none, through AppendString.

// ErrSyntax is what an appender returns for a value not in a form its
// column's type takes (text that is not a UUID or an IP address, raw bytes
// of the wrong length, a number for a type without numbers); nothing is
// appended. Like ErrRange, it is returned as is: the caller names the value
// and the type in its own message.
var ErrSyntax = errors.New("not a value of the type's form")

// Texts appends values to the columns of one string-family type, checking
// each against the type: FixedString(N) takes at most N bytes (ErrRange
// past them); UUID takes the 36-character form xxxxxxxx-xxxx-xxxx-xxxx-
// xxxxxxxxxxxx of hex digits, or 16 raw bytes; Enum takes one of its names,
// or one of its numbers (ErrRange for any other); IPv4 takes the dotted form,
// 4 raw bytes or the address as a number; IPv6 takes any IPv6 text form
// without a zone (an IPv4 address as its IPv4-mapped form) or 16 raw bytes.
// Text in no form of the type returns ErrSyntax. A refused value is not
// appended.
//
// A Texts is stateless and safe for concurrent use; the column passed in
// must be one NewColumn made for the type (for a Nullable, its Inner).
type Texts interface {
	// AppendText appends the value whose text form is b.
	AppendText(col Column, b []byte) error
	// AppendString is AppendText of a string.
	AppendString(col Column, s string) error
	// AppendBytes appends raw bytes: String's and FixedString's content
	// (as AppendText), UUID's 16 bytes, IPv4's 4 and IPv6's 16 (network
	// order), an Enum's name (as AppendText).
	AppendBytes(col Column, b []byte) error
	// AppendInt appends an Enum's value numbered v, or the IPv4 address
	// numbered v; the other types have no numbers (ErrSyntax).
	AppendInt(col Column, v int64) error
	// Numbers reports whether AppendInt takes numbers (Enum, IPv4).
	Numbers() bool
	// Text returns row i of col as text: the value for String,
	// FixedString (without its padding), UUID and Enum (its name); IPv4's
	// dotted form; IPv6's text, an IPv4-mapped address in dotted form.
	// The string may share the column's memory.
	Text(col Column, i int) string
	// Refusal says why an append returned err (ErrRange or ErrSyntax),
	// as the rest of "value x is ...": "longer than 3 bytes" for a
	// FixedString(3), "not a UUID", "not an IPv4 address", "out of range"
	// for an IPv4 number, "not an IP address", "not a value of the enum".
	Refusal(err error) string
}

// TextsOf returns the appender of the string-family type t (or
// LowCardinality of one), and false when t is not one.
func TextsOf(t *Type) (Texts, bool) {
	t = t.Base()
	switch t.Kind {
	case KindString:
		return &stringTexts{}, true
	case KindFixedString:
		return &fixedStringTexts{n: t.Len}, true
	case KindUUID:
		return &uuidTexts{}, true
	case KindEnum8, KindEnum16:
		names := make(map[int16]string, len(t.Enum))
		for name, v := range t.Enum {
			// Two names of one value: the smallest, whatever the map's
			// order.
			if old, ok := names[v]; !ok || name < old {
				names[v] = name
			}
		}
		return &enumTexts{values: t.Enum, names: names}, true
	case KindIPv4:
		return &ipv4Texts{}, true
	case KindIPv6:
		return &ipv6Texts{}, true
	}
	return nil, false
}

// AppendString appends s to a String column (or LowCardinality(String)),
// which takes any bytes: what TextsOf(String) does, without an interface
// call, for the decoders' and the transform's hot path.
func AppendString[T string | []byte](col Column, s T) {
	c := col.(*Strings)
	c.Buf = append(c.Buf, s...)
	c.Ends = append(c.Ends, len(c.Buf))
}

// str is b as a string sharing its memory, for checks that do not keep it.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

type stringTexts struct{}

func (*stringTexts) AppendText(col Column, b []byte) error {
	col.(*Strings).Append(b)
	return nil
}

func (*stringTexts) AppendString(col Column, s string) error {
	col.(*Strings).AppendString(s)
	return nil
}

func (*stringTexts) AppendBytes(col Column, b []byte) error {
	col.(*Strings).Append(b)
	return nil
}

func (*stringTexts) AppendInt(Column, int64) error { return ErrSyntax }

func (*stringTexts) Text(col Column, i int) string { return col.(*Strings).Value(i) }

func (*stringTexts) Numbers() bool { return false }

func (*stringTexts) Refusal(error) string { return "not a string" }

// fixedStringTexts stores a value of at most n bytes as it is: the encoder
// pads it.
type fixedStringTexts struct{ n int }

func (a *fixedStringTexts) AppendText(col Column, b []byte) error {
	if len(b) > a.n {
		return ErrRange
	}
	col.(*Strings).Append(b)
	return nil
}

func (a *fixedStringTexts) AppendString(col Column, s string) error {
	if len(s) > a.n {
		return ErrRange
	}
	col.(*Strings).AppendString(s)
	return nil
}

func (a *fixedStringTexts) AppendBytes(col Column, b []byte) error { return a.AppendText(col, b) }

func (*fixedStringTexts) AppendInt(Column, int64) error { return ErrSyntax }

func (*fixedStringTexts) Text(col Column, i int) string { return col.(*Strings).Value(i) }

func (*fixedStringTexts) Numbers() bool { return false }

func (a *fixedStringTexts) Refusal(err error) string {
	if err == ErrRange {
		return fmt.Sprintf("longer than %d bytes", a.n)
	}
	return "not a string"
}

type uuidTexts struct{}

func (*uuidTexts) AppendText(col Column, b []byte) error {
	if !isUUID(str(b)) {
		return ErrSyntax
	}
	col.(*Strings).Append(b)
	return nil
}

func (*uuidTexts) AppendString(col Column, s string) error {
	if !isUUID(s) {
		return ErrSyntax
	}
	col.(*Strings).AppendString(s)
	return nil
}

// AppendBytes stores 16 bytes in the 36-character form, in lower case.
func (*uuidTexts) AppendBytes(col Column, b []byte) error {
	if len(b) != 16 {
		return ErrSyntax
	}
	const hex = "0123456789abcdef"
	var t [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			t[j] = '-'
			j++
		}
		t[j], t[j+1] = hex[c>>4], hex[c&15]
		j += 2
	}
	col.(*Strings).Append(t[:])
	return nil
}

func (*uuidTexts) AppendInt(Column, int64) error { return ErrSyntax }

func (*uuidTexts) Text(col Column, i int) string { return col.(*Strings).Value(i) }

func (*uuidTexts) Numbers() bool { return false }

func (*uuidTexts) Refusal(error) string { return "not a UUID" }

// isUUID reports whether s is in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// of hex digits.
func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	// The four dashes are the only bytes that are not hex digits: one
	// pass over all 36 bytes counts exactly four.
	b := (*[36]byte)(unsafe.Pointer(unsafe.StringData(s)))
	n := 0
	for i := 0; i < 36; i += 4 {
		n += int(notHex[b[i]]) + int(notHex[b[i+1]]) + int(notHex[b[i+2]]) + int(notHex[b[i+3]])
	}
	return n == 4
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

// enumTexts stores an Enum's names: values maps them to their numbers,
// names the numbers back.
type enumTexts struct {
	values map[string]int16
	names  map[int16]string
}

func (a *enumTexts) AppendText(col Column, b []byte) error {
	if _, ok := a.values[string(b)]; !ok {
		return ErrRange
	}
	col.(*Strings).Append(b)
	return nil
}

func (a *enumTexts) AppendString(col Column, s string) error {
	if _, ok := a.values[s]; !ok {
		return ErrRange
	}
	col.(*Strings).AppendString(s)
	return nil
}

func (a *enumTexts) AppendBytes(col Column, b []byte) error { return a.AppendText(col, b) }

func (a *enumTexts) AppendInt(col Column, v int64) error {
	name, ok := a.names[int16(v)]
	if !ok || int64(int16(v)) != v {
		return ErrRange
	}
	col.(*Strings).AppendString(name)
	return nil
}

func (*enumTexts) Text(col Column, i int) string { return col.(*Strings).Value(i) }

func (*enumTexts) Numbers() bool { return true }

func (*enumTexts) Refusal(error) string { return "not a value of the enum" }

type ipv4Texts struct{}

func (*ipv4Texts) Numbers() bool { return true }

func (*ipv4Texts) Text(col Column, i int) string {
	n := col.(*Fixed[uint32]).Data[i]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

func (*ipv4Texts) Refusal(err error) string {
	if err == ErrRange {
		return "out of range"
	}
	return "not an IPv4 address"
}

func (a *ipv4Texts) AppendText(col Column, b []byte) error { return a.AppendString(col, str(b)) }

func (*ipv4Texts) AppendString(col Column, s string) error {
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is4() {
		return ErrSyntax
	}
	b := ip.As4()
	col.(*Fixed[uint32]).Append(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
	return nil
}

func (*ipv4Texts) AppendBytes(col Column, b []byte) error {
	if len(b) != 4 {
		return ErrSyntax
	}
	col.(*Fixed[uint32]).Append(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
	return nil
}

func (*ipv4Texts) AppendInt(col Column, v int64) error {
	if v < 0 || v > math.MaxUint32 {
		return ErrRange
	}
	col.(*Fixed[uint32]).Append(uint32(v))
	return nil
}

type ipv6Texts struct{}

func (a *ipv6Texts) AppendText(col Column, b []byte) error { return a.AppendString(col, str(b)) }

func (*ipv6Texts) AppendString(col Column, s string) error {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return ErrSyntax
	}
	col.(*Fixed[[16]byte]).Append(ip.As16())
	return nil
}

func (*ipv6Texts) AppendBytes(col Column, b []byte) error {
	if len(b) != 16 {
		return ErrSyntax
	}
	col.(*Fixed[[16]byte]).Append([16]byte(b))
	return nil
}

func (*ipv6Texts) AppendInt(Column, int64) error { return ErrSyntax }

func (*ipv6Texts) Numbers() bool { return false }

func (*ipv6Texts) Text(col Column, i int) string {
	return netip.AddrFrom16(col.(*Fixed[[16]byte]).Data[i]).Unmap().String()
}

func (*ipv6Texts) Refusal(error) string { return "not an IP address" }

// textKey is the Key of the string family: String's bytes, FixedString's
// padded to N, an Enum's number (Enum8 one byte, Enum16 two), IPv4's four
// bytes of its number, IPv6's 16 bytes.
func textKey(t *Type) (Key, bool) {
	switch t.Kind {
	case KindString:
		return Key{Text: func(col Column, i int) string { return col.(*Strings).Value(i) }}, true
	case KindFixedString:
		n := t.Len
		return Key{Pad: n, Text: func(col Column, i int) string {
			s := col.(*Strings).Value(i)
			return s[:min(len(s), n)]
		}}, true
	case KindEnum8, KindEnum16:
		width := 1
		if t.Kind == KindEnum16 {
			width = 2
		}
		names := make([]string, 0, len(t.Enum))
		for n := range t.Enum {
			names = append(names, n)
		}
		slices.Sort(names)
		vals := make([]int16, len(names))
		for i, n := range names {
			vals[i] = t.Enum[n]
		}
		return Key{Width: width, Bits: func(col Column, i int) uint64 {
			s := col.(*Strings).Value(i)
			if k, ok := slices.BinarySearch(names, s); ok {
				return uint64(vals[k])
			}
			return 0
		}}, true
	case KindIPv4:
		return Key{Width: 4, Bits: func(col Column, i int) uint64 { return uint64(col.(*Fixed[uint32]).Data[i]) }}, true
	case KindIPv6:
		return Key{Text: func(col Column, i int) string {
			v := &col.(*Fixed[[16]byte]).Data[i]
			return unsafe.String(&v[0], len(v))
		}}, true
	}
	return Key{}, false
}

// textNames are the string family's names.
var textNames = map[string]Kind{
	"String": KindString, "FixedString": KindFixedString, "UUID": KindUUID,
	"Enum8": KindEnum8, "Enum16": KindEnum16, "IPv4": KindIPv4, "IPv6": KindIPv6,
}

// zeroUUID is the default of UUID.
const zeroUUID = "00000000-0000-0000-0000-000000000000"

// textColumn is the column of a string-family type: Strings holding each
// value's text, IPv4 as the address's big-endian number (1.2.3.4 is
// 0x01020304), IPv6 as its 16 bytes. UUID's default is the zero UUID, an
// Enum's the name of its lowest value.
func textColumn(t *Type) (Column, bool) {
	switch t.Kind {
	case KindString, KindFixedString:
		return &Strings{}, true
	case KindUUID:
		return &Strings{def: []byte(zeroUUID)}, true
	case KindEnum8, KindEnum16:
		return &Strings{def: []byte(t.firstEnum())}, true
	case KindIPv4:
		return &Fixed[uint32]{}, true
	case KindIPv6:
		return &Fixed[[16]byte]{}, true
	}
	return nil, false
}

// firstEnum is the name of the Enum's lowest value (the smallest name
// among names of one value), the Enum's implicit default; "" without
// values.
func (t *Type) firstEnum() string {
	first, seen := "", false
	for name, v := range t.Enum {
		if !seen || v < t.Enum[first] || v == t.Enum[first] && name < first {
			first, seen = name, true
		}
	}
	return first
}
