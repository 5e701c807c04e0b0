package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
)

// blocksPrefix starts the commit metadata of exactly-once delivery.
const blocksPrefix = "etl1:"

// EncodeBlocks is the commit metadata naming insert blocks, each the
// half-open offset range [first, next): "etl1:" and the ranges
// "first-next" separated by commas ("etl1:" alone when there is none).
func EncodeBlocks(blocks [][2]int64) string {
	b := []byte(blocksPrefix)
	for i, r := range blocks {
		b = appendBlock(b, i, r[0], r[1])
	}
	return string(b)
}

// appendBlock appends the i-th block [first, next) of the metadata to b.
func appendBlock(b []byte, i int, first, next int64) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = strconv.AppendInt(b, first, 10)
	b = append(b, '-')
	return strconv.AppendInt(b, next, 10)
}

// DecodeBlocks parses commit metadata written by EncodeBlocks. Metadata
// written by something else (or none) holds no block.
func DecodeBlocks(meta string) ([][2]int64, error) {
	rest, ok := strings.CutPrefix(meta, blocksPrefix)
	if !ok || rest == "" {
		return nil, nil
	}
	var out [][2]int64
	for _, part := range strings.Split(rest, ",") {
		a, b, ok := strings.Cut(part, "-")
		first, err1 := strconv.ParseInt(a, 10, 64)
		next, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || next <= first {
			return nil, fmt.Errorf("commit metadata %q: bad block %q", meta, part)
		}
		out = append(out, [2]int64{first, next})
	}
	return out, nil
}
