// Package names finds the name a misspelt one most likely meant, for the
// did-you-mean of configuration errors (transform fields and functions,
// sink.clickhouse.columns, exclude_columns).
package names

import (
	"fmt"
	"strings"
)

// Closest returns the candidate closest to name by edit distance, when it
// is close enough to be a likely typo (at most 2 edits, 3 for names of 9
// characters or more), or "". name itself is never returned; ties go to
// the candidate that sorts first.
func Closest(name string, candidates []string) string {
	best, bestD := "", 0
	limit := 2
	if len(name) >= 9 {
		limit = 3
	}
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := Distance(strings.ToLower(name), strings.ToLower(c))
		if d <= limit && (best == "" || d < bestD || d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is ` (did you mean "x"?)` for the Closest candidate, or "".
func DidYouMean(name string, candidates []string) string {
	if s := Closest(name, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// Distance is the optimal string alignment distance (Levenshtein with
// transpositions of adjacent characters).
func Distance(a, b string) int {
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	pp, prev, cur := rows[0], rows[1], rows[2]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}
