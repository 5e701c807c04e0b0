// Package transform is the transform chain configured under `transform:`:
// flatten, filter, set, rename, drop and route steps, compiled once at
// startup into typed Go closures and applied to every record without a map
// or an allocation per row.
//
// # Data model
//
// A record is first decoded into a staging chunk whose schema (Inputs)
// holds exactly the source fields the chain and the sinks read: `amount`,
// `user.id` for a field of a nested object, and for the array of objects
// that a flatten step expands, one Array column per element field in
// ClickHouse's Nested layout (`events.value Array(Int64)`, `events.kind
// Array(String)`). A field's staging type is its type in decode.fields, or
// else the type of the sink column it goes into unchanged (through
// renames; Array(T) for a flattened element field feeding a T column), or
// the type a known Avro schema gives it (InputsKnown). A field read only by
// expressions and typed by none of these must be declared in decode.fields.
//
// Run takes staging row i and appends zero or more rows to the sinks'
// chunks. Steps before the flatten run once per record; steps after it
// run once per element, and there see the element's fields
// (`events.value`; for an array of scalars, the array's own name) and the
// record's fields. Without a route step every row goes to every sink; a
// route step sends it to one. A sink column is filled from the field its
// Output.Fields names (after the chain's renames and sets), converted to
// the column's type.
//
// # Steps
//
//	flatten: events               one row per element of events (one flatten per chain)
//	filter: <bool expression>     keep the row when true
//	set: {f: <expr>, g: <expr>}   derive or overwrite fields, in order; later
//	                              assignments and steps read the new values
//	rename: {old: new}            all renames of a step at once ({a: b, b: a} swaps)
//	drop: [f, g]                  later steps and sinks can no longer read them
//	route:                        first rule whose when is true wins (a rule
//	  rules: [{when: <expr>, sink: name}]  without when always matches)
//	  unmatched: skip | fail | <sink>      skip drops the row (counted), fail
//	                                       rejects the record (reason unroutable);
//	                                       empty means fail
//
// A dropped or skipped row counts as delivered. A record whose chain
// fails (reasons below) leaves no row in any sink: Run truncates what it
// appended.
//
// # Expressions
//
// Expressions use expr-lang's syntax (its parser), type-checked against
// the staging schema and compiled here; expr's functions and VM are not
// used. Types: Int64, UInt64, Float64, String, Bool, Time (an instant with
// nanosecond precision, 1677-09-22..2262-04-10, UTC), and Nullable of
// each. Fields read as: Int8..Int64 and UInt8..UInt32 → Int64; UInt64 →
// UInt64; Float32, Float64 and Decimal → Float64; String, FixedString
// (its stored bytes), LowCardinality(String), Enum (its name) and UUID
// (its text) → String; Bool → Bool; Date, Date32, DateTime, DateTime64 →
// Time; Nullable(T) → Nullable. Arrays (other than the flattened one),
// Map, Tuple, IPv4/IPv6 and 128/256-bit integers cannot be read by
// expressions, only copied unchanged into a column of the same type; a
// String value can go into FixedString, UUID, IPv4 and IPv6 columns
// through the type's checks (chunk.Texts).
//
// Literals: integers (`42`, `0x2a`, `1_000`; Int64), floats (`1.5`,
// `1e3`), strings ("..." or '...' with Go escapes), `true`, `false`,
// `nil`. A non-negative integer literal next to a UInt64 operand is a
// UInt64.
//
// Arithmetic:
//   - `+ - * %` on two Int64 give Int64, wrapping on overflow
//     (two's complement, no error); on two UInt64 give UInt64, wrapping,
//     except `-`, which gives Int64 as in ClickHouse (the wrapped
//     difference read as signed); on Int64 and UInt64 give Int64 (the
//     UInt64 read as two's complement).
//   - Any Float64 operand makes the operation Float64.
//   - `/` is always Float64 division, as in ClickHouse: `7 / 2` is 3.5.
//   - `intDiv(a, b)` is integer division, truncated toward zero (UInt64
//     when both are unsigned).
//   - `%` is the remainder with the sign of the dividend (`-7 % 2` is -1);
//     on floats it is math.Mod.
//   - Division or modulo by zero, integer or float, fails the record with
//     reason "transform".
//   - `-x` of a UInt64 is Int64. String + String concatenates.
//
// Comparison `== != < > <= >=` of numbers (Int64 against UInt64 exactly,
// against Float64 as floats), strings (bytewise), Times, and Bools (== and
// != only); `a < b < c` means `a < b && b < c`. `x in [lit, ...]` with a
// list of literals. Logic: `and`/`&&`, `or`/`||`, `not`/`!`, short-circuit,
// on Bool only. `cond ? a : b` and `if cond { a } else { b }`: the branches
// must have one type (numbers unify to Float64 or Int64; nil makes the
// result Nullable).
//
// Nullable: a Nullable value can only be tested (`x == nil`, `x != nil`),
// given a default with `x ?? d` (chains: `a ?? b ?? 0`), passed through a
// conditional, stored by set and written to a Nullable column. Anything
// else is a compile error asking for ??, so NULL never silently becomes 0.
//
// Strings (bytes; upper/lower/trim touch ASCII only):
//
//	len(s)                          length in bytes (Int64)
//	upper(s), lower(s)              ASCII letters only
//	trim(s), trim(s, "chars")       ASCII white space, or the given characters, at both ends
//	trimPrefix(s, p), trimSuffix(s, p)
//	substring(s, start[, length])   0-based byte offsets; a negative start counts
//	                                from the end; out-of-range bounds are clamped;
//	                                a length <= 0 gives ""
//	concat(a, b, ...), a + b
//	split(s, sep)[i]                part i, 0-based, -1 the last; "" when there is
//	                                no such part; an empty sep splits into bytes
//	replace(s, old, new)            every occurrence; an empty old changes nothing
//	matches(s, "re"), s matches "re"  Go RE2 syntax; the pattern must be a
//	                                literal, compiled once at startup
//	contains(s, t), startsWith(s, p), endsWith(s, p) (also as operators:
//	s contains t), hasPrefix, hasSuffix, indexOf(s, t) (byte offset or -1)
//
// Time (UTC; layouts are Go layouts, or the names RFC3339, RFC3339Nano,
// DateTime, DateOnly, RFC1123, RFC1123Z, RFC822, RFC822Z; layouts and units
// must be literals):
//
//	parse_time(s, layout[, zone])   a zone in s is honoured, else s is local time
//	                                in zone (a literal tz database name such as
//	                                "Asia/Tokyo", checked at startup; a time in a
//	                                daylight-saving gap takes the later offset, in
//	                                an overlap its first instant, as the server
//	                                reads it), else UTC; a string that does not
//	                                match fails the record ("transform"). A Time is
//	                                an instant: to read a text as a DateTime('Z')
//	                                column would, give that column's zone
//	format_time(t, layout[, zone])  String, in zone (UTC without it)
//	truncate(t, unit)               unit: second, minute, hour, day, week (from
//	                                Monday), month, year, or a duration like "15m"
//	                                (multiples since the epoch)
//	to_unix(t), to_unix_ms(t)       Int64, floored
//	from_unix(n), from_unix_ms(n)   Int64, UInt64 or Float64 epoch to Time
//
// now() is refused: a record must give the same rows every time it is
// read.
//
// Conversions and numbers: int(x) (Float64 truncated toward zero, String
// parsed in base 10 after trimming spaces, Bool 0/1), uint(x), float(x),
// string(x) (numbers as ClickHouse's toString prints them, Bool as
// true/false, Time as RFC 3339), abs, round(x[, digits]) (half to even,
// as ClickHouse rounds floats), floor, ceil, min(a, b, ...), max(a, b,
// ...). A value out of the target's range fails the record with reason
// "out_of_range", text that is not a number with "wrong_type".
//
// Hashing: xxhash64(x) is XXH64 with seed 0 (UInt64) of a String's bytes,
// or of the 8 little-endian bytes of an Int64, UInt64 or Float64 (1 byte
// for Bool): ClickHouse's xxHash64 of the same value as Int64, UInt64,
// Float64 or String.
//
// JSON, from a String holding a JSON document (parsed once per record or
// element and reused by every json_* call on the same string): path "a.b"
// walks objects, a numeric part indexes arrays ("items.0.id").
// json_string(s, path), json_int, json_float, json_bool give the zero
// value ("", 0, false) when s is not JSON, the path is missing or the value
// has another type (like ClickHouse's JSONExtract*); json_has(s, path)
// tells whether the path exists.
//
// # Writing sink columns
//
// A field copied unchanged from a staging column of the column's type
// (LowCardinality and time zones aside) is copied as is, whatever the type
// (Array, Map, Tuple, ...). Otherwise the value is converted:
// Int64/UInt64/Bool into any integer column (range-checked, out_of_range);
// numbers into Float32/Float64 and Decimal (digits checked); String into
// String, FixedString(N) (at most N bytes), Enum (a name of the enum),
// UUID (checked, wrong_type); an integer into an Enum by value; Time into
// DateTime (seconds, 1970..2106), DateTime64(P), Date, Date32 (range-
// checked); Int64/UInt64 into DateTime as epoch seconds; a Nullable value
// into a Nullable column (nil gives NULL); LowCardinality(T) as T. Other
// combinations are compile errors that say how to convert (int(x),
// string(x), parse_time, from_unix, ??). An output field "" gives the
// column its type's zero value.
//
// # Errors
//
// Compile reports every problem at once, each as
// "FILE:LINE:COL: transform[2].filter: MESSAGE, at column C of: EXPR"
// (transform[3].set.total, transform[4].route.rules[1].when,
// sink "main" column amount (UInt32) for a sink column): syntax errors,
// unknown fields (with a did-you-mean), fields read before the flatten or
// after a drop or rename, type mismatches, a filter or route condition
// that is not Bool, a set result that cannot go into the column it feeds,
// route sinks that do not exist.
//
// Run returns an *Error whose Reason is out_of_range, wrong_type,
// transform or unroutable, and whose Step names the step or sink column.
//
// # Envelope
//
// With decode.envelope: debezium the chain's first step is the envelope
// (envelope.go, NewDebezium, Chain.SetEnvelope): Run then takes staging
// rows of the change event's fields (Envelope.Stage: before.F, after.F,
// op, source.*, under payload. too) and runs the rest of the chain over
// the 0 to 2 rows it makes of each, whose fields are the row's own and
// EnvelopeFields (_version, _deleted, _sign, _op, _source.*). A record
// that is no change event, or lacks the key where its operation needs it,
// fails with reason corrupt; truncates, messages and unknown operations
// make no row and set Result.Skipped.
//
// # Sharding
//
// An Output with a ShardKey picks each row's shard as ClickHouse's
// Distributed engine does with sharding key xxHash64(column): KeyHasher
// hashes the column value's bytes as the server holds them, ShardOf maps
// the hash onto the weighted shard ranges.
package transform
