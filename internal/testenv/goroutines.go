package testenv

import (
	"bytes"
	"runtime"
	"strconv"
)

// Goroutines returns the ids of the goroutines of the process that exist
// now. A leak check takes it before the code under test runs and passes it
// to GoroutinesSince afterwards: goroutine ids are never reused, so a
// goroutine that was already on its way out when Goroutines was called
// cannot hide a new one, as it could in a comparison of counts.
func Goroutines() map[int64]bool {
	ids := map[int64]bool{}
	for _, g := range goroutineStacks() {
		ids[g.id] = true
	}
	return ids
}

// GoroutinesSince returns the stack of every goroutine that exists now and
// is not in before (a set from Goroutines), the calling one excepted.
func GoroutinesSince(before map[int64]bool) []string {
	var out []string
	for i, g := range goroutineStacks() {
		if i > 0 && !before[g.id] { // the first stack is the caller's
			out = append(out, g.stack)
		}
	}
	return out
}

type goroutineStack struct {
	id    int64
	stack string
}

// goroutineStacks parses runtime.Stack's dump of every goroutine, whose
// first entry is the calling goroutine's. Each goroutine's stack starts
// with a line "goroutine N [state]:" and ends at a blank line.
func goroutineStacks() []goroutineStack {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutineStack
	for _, s := range bytes.Split(buf, []byte("\n\n")) {
		rest, ok := bytes.CutPrefix(s, []byte("goroutine "))
		if !ok {
			continue
		}
		num, _, _ := bytes.Cut(rest, []byte(" "))
		id, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, goroutineStack{id: id, stack: string(s)})
	}
	return out
}
