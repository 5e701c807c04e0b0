package schemaregistry

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// FrameHeaderLen is the length of the Confluent wire-format header: the magic
// byte 0 and a 4-byte big-endian schema id.
const FrameHeaderLen = 5

// magicByte is the first byte of every Confluent-framed record.
const magicByte = 0

var (
	// ErrBadMagic means a record does not start with the Confluent magic
	// byte 0, so it is not Confluent-framed.
	ErrBadMagic = errors.New("schemaregistry: wrong magic byte")
	// ErrTruncated means a record is shorter than the 5-byte frame header.
	ErrTruncated = errors.New("schemaregistry: frame truncated")
)

// ParseFrame splits a Confluent-framed record into its schema id and its
// payload (the Avro datum). The payload aliases b; it may be empty. A record
// whose first byte is not 0 gives an error wrapping ErrBadMagic (checked
// first, since it is the more telling diagnosis for, say, a short JSON
// record); a record shorter than the header gives one wrapping ErrTruncated.
func ParseFrame(b []byte) (id int32, payload []byte, err error) {
	if len(b) > 0 && b[0] != magicByte {
		return 0, nil, fmt.Errorf("%w: first byte is 0x%02x, want 0x00", ErrBadMagic, b[0])
	}
	if len(b) < FrameHeaderLen {
		return 0, nil, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrTruncated, len(b), FrameHeaderLen)
	}
	return int32(binary.BigEndian.Uint32(b[1:FrameHeaderLen])), b[FrameHeaderLen:], nil
}

// AppendFrame appends the Confluent frame of payload under schema id to dst
// and returns the extended slice: the inverse of ParseFrame, for producers
// and tests.
func AppendFrame(dst []byte, id int32, payload []byte) []byte {
	dst = append(dst, magicByte)
	dst = binary.BigEndian.AppendUint32(dst, uint32(id))
	return append(dst, payload...)
}
