// Command mutate measures how many planted bugs the simulation and the fast
// tests catch (make mutate). It reads the corpus of mutations in
// test/mutations (one file each; see test/mutations/README.md), checks that
// each one's old text occurs exactly once in its file, then, for each
// mutation in turn, in a scratch copy of the tree (the working tree is
// never changed): applies it, builds the pipeline's test binary, runs the
// simulation (make sim's TestSim) over SEEDS seeds in growing batches,
// stopping at the first batch with a violation, and, when the simulation
// passes, the fast tests (go test -short) of every package the mutation
// changes. A mutation that makes any of them fail is caught. It prints one
// line per mutation and ends with
//
//	mutate: N planted, K caught, score P%
//
// With -check it only checks that every mutation applies to the tree.
// Environment: SEEDS (default 1000), MUTATE_ONLY (a regular expression on
// the mutations' names: run only those), MUTATE_KEEP=1 keeps the scratch
// copy.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// corpusDir holds the mutations, relative to the repository's root.
const corpusDir = "test/mutations"

// A hunk replaces old, which must occur exactly once in file, by new.
type hunk struct {
	file     string
	old, new string
}

// A mutation is one planted bug: one or more hunks applied together.
type mutation struct {
	name  string // the corpus file's name without .txt
	about string // its comment lines
	hunks []hunk
}

// parse reads a corpus file:
//
//	# comment lines: what the mutation plants
//	file: path/from/the/root.go
//	@@ old
//	exact text, one or more lines
//	@@ new
//	its replacement (may be empty)
//	@@ end
//
// with any number of file/old/new/end groups.
func parse(name, text string) (mutation, error) {
	m := mutation{name: name}
	lines := strings.Split(text, "\n")
	var file string
	var about []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "#"):
			about = append(about, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.HasPrefix(line, "file:"):
			file = strings.TrimSpace(strings.TrimPrefix(line, "file:"))
		case line == "@@ old":
			if file == "" {
				return m, fmt.Errorf("line %d: @@ old before any file line", i+1)
			}
			var old, repl []string
			j := i + 1
			for ; j < len(lines) && lines[j] != "@@ new"; j++ {
				old = append(old, lines[j])
			}
			if j == len(lines) {
				return m, fmt.Errorf("line %d: @@ old without @@ new", i+1)
			}
			k := j + 1
			for ; k < len(lines) && lines[k] != "@@ end"; k++ {
				repl = append(repl, lines[k])
			}
			if k == len(lines) {
				return m, fmt.Errorf("line %d: @@ new without @@ end", j+1)
			}
			m.hunks = append(m.hunks, hunk{file: file, old: strings.Join(old, "\n"), new: strings.Join(repl, "\n")})
			i = k
		case strings.TrimSpace(line) == "":
		default:
			return m, fmt.Errorf("line %d: unexpected %q", i+1, line)
		}
	}
	if len(m.hunks) == 0 {
		return m, errors.New("no @@ old / @@ new / @@ end hunk")
	}
	m.about = strings.Join(about, " ")
	return m, nil
}

// apply returns the files m changes with their mutated contents, read from
// root; it fails when an old text does not occur exactly once.
func (m mutation) apply(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, h := range m.hunks {
		src, ok := out[h.file]
		if !ok {
			var err error
			if src, err = os.ReadFile(filepath.Join(root, h.file)); err != nil {
				return nil, err
			}
		}
		if h.old == "" || h.old == h.new {
			return nil, fmt.Errorf("%s: empty old text, or new text equal to it", h.file)
		}
		if n := bytes.Count(src, []byte(h.old)); n != 1 {
			return nil, fmt.Errorf("%s: the old text occurs %d times, want exactly once:\n%s", h.file, n, indent(h.old))
		}
		out[h.file] = bytes.Replace(src, []byte(h.old), []byte(h.new), 1)
	}
	return out, nil
}

func indent(s string) string { return "\t| " + strings.ReplaceAll(s, "\n", "\n\t| ") }

// packages returns the packages (./dir) of the files m changes.
func (m mutation) packages() []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range m.hunks {
		p := "./" + filepath.ToSlash(filepath.Dir(h.file))
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
}

func run() error {
	check := flag.Bool("check", false, "only check that every mutation applies to the tree")
	flag.Parse()
	root, err := gitOutput(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("find the repository's root: %w", err)
	}
	seeds := 1000
	if s := os.Getenv("SEEDS"); s != "" {
		if seeds, err = strconv.Atoi(s); err != nil || seeds < 1 {
			return fmt.Errorf("SEEDS=%q: want a positive number", s)
		}
	}
	var only *regexp.Regexp
	if s := os.Getenv("MUTATE_ONLY"); s != "" {
		if only, err = regexp.Compile(s); err != nil {
			return fmt.Errorf("MUTATE_ONLY: %w", err)
		}
	}

	// Read and check the whole corpus before running anything: a refactor
	// that moved a mutation's text shows here, loudly.
	muts, err := load(root)
	if err != nil {
		return err
	}
	var bad []string
	for _, m := range muts {
		if _, err := m.apply(root); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", m.name, err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d mutations do not apply to this tree (update them in %s):\n%s", len(bad), corpusDir, strings.Join(bad, "\n"))
	}
	if *check {
		fmt.Printf("mutate: %d mutations, each applies exactly once\n", len(muts))
		return nil
	}
	if only != nil {
		var sel []mutation
		for _, m := range muts {
			if only.MatchString(m.name) {
				sel = append(sel, m)
			}
		}
		muts = sel
	}
	if len(muts) == 0 {
		return errors.New("no mutation selected")
	}

	scratch, err := os.MkdirTemp("", "etl-mutate-")
	if err != nil {
		return err
	}
	if os.Getenv("MUTATE_KEEP") == "" {
		defer os.RemoveAll(scratch)
	}
	if err := copyTree(root, scratch); err != nil {
		return fmt.Errorf("copy the tree: %w", err)
	}
	fmt.Printf("mutate: %d mutations, %d seeds each, in %s\n", len(muts), seeds, scratch)

	caught := 0
	var survivors, broken []string
	for i, m := range muts {
		start := time.Now()
		res, err := try(scratch, m, seeds)
		took := time.Since(start).Round(time.Second)
		switch {
		case err != nil:
			broken = append(broken, m.name)
			fmt.Printf("mutate: [%d/%d] %s: ERROR %v (%v)\n", i+1, len(muts), m.name, err, took)
		case res != "":
			caught++
			fmt.Printf("mutate: [%d/%d] %s: caught by %s (%v)\n", i+1, len(muts), m.name, res, took)
		default:
			survivors = append(survivors, m.name)
			fmt.Printf("mutate: [%d/%d] %s: SURVIVED (%v): %s\n", i+1, len(muts), m.name, took, m.about)
		}
	}
	if len(survivors) > 0 {
		fmt.Printf("mutate: survivors: %s\n", strings.Join(survivors, " "))
	}
	n := len(muts) - len(broken)
	score := 0.0
	if n > 0 {
		score = 100 * float64(caught) / float64(n)
	}
	fmt.Printf("mutate: %d planted, %d caught, score %.0f%%\n", n, caught, score)
	if len(broken) > 0 {
		return fmt.Errorf("%d mutations could not be run: %s", len(broken), strings.Join(broken, " "))
	}
	return nil
}

// load reads every mutation of the corpus, in name order.
func load(root string) ([]mutation, error) {
	paths, err := filepath.Glob(filepath.Join(root, corpusDir, "*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []mutation
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		m, err := parse(strings.TrimSuffix(filepath.Base(p), ".txt"), string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mutation in %s", corpusDir)
	}
	return out, nil
}

// try applies m in scratch, runs the simulation and the fast tests, and
// restores the files. It returns what caught m ("" when nothing did), or
// an error when m could not be run (it does not build).
func try(scratch string, m mutation, seeds int) (caughtBy string, err error) {
	mutated, err := m.apply(scratch)
	if err != nil {
		return "", err
	}
	for file, b := range mutated {
		orig, err := os.ReadFile(filepath.Join(scratch, file))
		if err != nil {
			return "", err
		}
		defer func() {
			if werr := os.WriteFile(filepath.Join(scratch, file), orig, 0o644); werr != nil && err == nil {
				err = werr
			}
		}()
		if err := os.WriteFile(filepath.Join(scratch, file), b, 0o644); err != nil {
			return "", err
		}
	}

	bin := filepath.Join(scratch, "bin", "pipeline.test")
	if out, err := command(scratch, 10*time.Minute, "go", "test", "-c", "-vet=off", "-o", bin, "./pipeline"); err != nil {
		return "", fmt.Errorf("does not build: %v\n%s", err, tail(out, 10))
	}
	// The simulation, in batches that grow: most planted bugs fail in
	// the first seeds, and a failing batch ends the run.
	for first, size := 1, 25; first <= seeds; first, size = first+size, size*2 {
		n := min(size, seeds-first+1)
		out, err := command(scratch, 15*time.Minute, bin, "-test.run", "^TestSim$", "-test.count=1",
			"-test.timeout=10m", fmt.Sprintf("-sim.first=%d", first), fmt.Sprintf("-sim.seeds=%d", n), "-sim.replay=0")
		if err != nil {
			return simFailure(out, first, first+n-1), nil
		}
	}
	for _, pkg := range m.packages() {
		out, err := command(scratch, 10*time.Minute, "go", "test", "-short", "-count=1", "-vet=off", "-timeout=5m", pkg)
		if err != nil {
			return testFailure(out, pkg), nil
		}
	}
	return "", nil
}

var (
	simSeedRE  = regexp.MustCompile(`sim seed (\d+) \([^\n]*?\): \d+ violations, first at step (\d+): ([^\n]*)`)
	failTestRE = regexp.MustCompile(`--- FAIL: (\S+)`)
)

// simFailure describes a failed simulation run of seeds [first, last].
func simFailure(out []byte, first, last int) string {
	if m := simSeedRE.FindSubmatch(out); m != nil {
		return fmt.Sprintf("sim seed %s (step %s: %s)", m[1], m[2], clip(string(m[3]), 160))
	}
	return fmt.Sprintf("sim, seeds %d-%d: %s", first, last, firstFailure(out))
}

// testFailure describes a failed go test run of pkg.
func testFailure(out []byte, pkg string) string {
	if m := failTestRE.FindSubmatch(out); m != nil {
		return fmt.Sprintf("go test -short %s: %s", pkg, m[1])
	}
	return fmt.Sprintf("go test -short %s: %s", pkg, firstFailure(out))
}

// firstFailure is the first line of out that says why a test binary failed
// (a panic, a timeout, a build error), or its last line.
func firstFailure(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") ||
			strings.Contains(line, "test timed out") || strings.Contains(line, "deadlock") {
			return clip(line, 160)
		}
	}
	return clip(strings.TrimSpace(string(tail(out, 1))), 160)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// tail returns the last n lines of out.
func tail(out []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// command runs name in dir and returns its combined output; the process
// is killed after timeout.
func command(dir string, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("killed after %v: %w", timeout, err)
	}
	return out.Bytes(), err
}

func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// copyTree copies the files git knows of in root (tracked, and untracked
// ones not ignored, as they are in the working tree) to dst.
func copyTree(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted in the working tree
			}
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
