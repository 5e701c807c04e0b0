package chunk

// Key is how the server holds one value of a type when it hashes it (its
// xxHash64, murmurHash2_64, sipHash64 of a column: a Distributed table's
// sharding key): the bytes of the value as the server stores it. Exactly
// one form is set:
//
//   - Width > 0: the Width low bytes, little-endian, of Bits(col, i):
//     the integers, Bool, the floats (their IEEE bits), Date (UInt16
//     days), Date32 (Int32 days), DateTime (UInt32 seconds), DateTime64
//     (Int64 ticks), Enum8 and Enum16 (the name's number), IPv4;
//   - Words != nil: the words of Words(col, i), each little-endian (the
//     128- and 256-bit integers);
//   - Text != nil: the bytes of Text(col, i), padded with zero bytes to
//     Pad when Pad > 0 (String, FixedString(N), IPv6's 16 bytes). The
//     string shares the column's memory.
//
// The functions take a column NewColumn made for the type (for a
// Nullable, its Inner) and allocate nothing.
type Key struct {
	Width int
	Bits  func(col Column, i int) uint64
	Words func(col Column, i int) []uint64
	Text  func(col Column, i int) string
	Pad   int
}

// KeyOf returns the Key of type t (or of LowCardinality of it), and false
// for a type with none here: Nullable, Array, Map, Tuple, UUID, Decimal.
// Each family says how the server holds its values (intKey, floatKey,
// timeKey, textKey).
func KeyOf(t *Type) (Key, bool) {
	t = t.Base()
	for _, family := range [...]func(*Type) (Key, bool){intKey, floatKey, timeKey, textKey} {
		if k, ok := family(t); ok {
			return k, true
		}
	}
	return Key{}, false
}

// fixedKey is the Key of a Fixed[T] column of an integer type of width
// bytes.
func fixedKey[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](width int) Key {
	return Key{Width: width, Bits: func(col Column, i int) uint64 { return uint64(col.(*Fixed[T]).Data[i]) }}
}
