package config

// The checks of single values the validation rules share: ranges, one of
// a set, present, and a revoke's bound against the group's.

import (
	"fmt"
	"strconv"
	"strings"
)

// drainFitsRebalance checks that a revoke's drain and commit fit the
// group's rebalance timeout, and says which key to change when they do not.
func drainFitsRebalance(drain, rebalance Duration) string {
	commit := Duration(RevokeCommitTimeout)
	if drain+commit <= rebalance {
		return ""
	}
	msg := fmt.Sprintf("%s plus the %s a revoke's commit may take (%s) must fit source.kafka.rebalance_timeout (%s): "+
		"a member still in its revoke when the rebalance timeout ends is dropped from the group and its commit refused; ",
		drain, commit, drain+commit, rebalance)
	if rebalance-commit >= sec {
		return msg + fmt.Sprintf("lower checkpoint.drain_timeout to at most %s or raise source.kafka.rebalance_timeout to at least %s",
			rebalance-commit, drain+commit)
	}
	return msg + fmt.Sprintf("raise source.kafka.rebalance_timeout to at least %s", drain+commit)
}

func intRange(v, lo, hi int) string {
	switch {
	case v < lo && lo == 1:
		return fmt.Sprintf("must be > 0, got %d", v)
	case v < lo:
		return fmt.Sprintf("must be >= %d, got %d", lo, v)
	case v > hi:
		return fmt.Sprintf("must be <= %d, got %d", hi, v)
	}
	return ""
}

func sizeRange(v, lo, hi ByteSize) string {
	switch {
	case v < 0:
		return fmt.Sprintf("must not be negative, got %d", int64(v))
	case v < lo:
		return fmt.Sprintf("must be at least %s, got %s", lo, v)
	case v > hi:
		return fmt.Sprintf("must be at most %s, got %s", hi, v)
	}
	return ""
}

func durRange(v, lo, hi Duration) string {
	switch {
	case v < lo:
		return fmt.Sprintf("must be at least %s, got %s", lo, v)
	case v > hi:
		return fmt.Sprintf("must be at most %s, got %s", hi, v)
	}
	return ""
}

func openUnit(v float64) string {
	if v <= 0 || v >= 1 {
		return fmt.Sprintf("must be between 0 and 1 (exclusive), got %s", fmtFloat(v))
	}
	return ""
}

func oneOf[T ~string](v T, allowed ...T) string {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		if v == a {
			return ""
		}
		names[i] = string(a)
	}
	return fmt.Sprintf("must be one of %s; got %q", strings.Join(names, ", "), v)
}

func nonEmpty(v string) string {
	if v == "" {
		return "must not be empty"
	}
	return ""
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
