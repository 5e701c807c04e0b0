package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// securityDoc is the document of the permissions etl needs.
const securityDoc = "../docs/SECURITY.md"

// systemTable finds the system tables the program reads; statements maps
// the DDL it runs to the grant docs/SECURITY.md must name for it.
var (
	systemTable = regexp.MustCompile(`\bsystem\.([a-z_]+)`)
	statements  = map[*regexp.Regexp]string{
		regexp.MustCompile(`"CREATE TABLE `):        "`CREATE TABLE`",
		regexp.MustCompile(`"ALTER TABLE [^"]*ADD`): "`ALTER ADD COLUMN`",
		regexp.MustCompile(`ADD COLUMN`):            "`ALTER ADD COLUMN`",
	}
)

// TestSecurityGrants checks that docs/SECURITY.md's ClickHouse grants cover
// every system table the program reads and the DDL it runs, so that a user
// who grants what the document lists is not refused by a feature it names:
// each `system.X` in a non-test Go file of the program must appear in the
// grants table and in its GRANT example, and a CREATE TABLE or an ALTER
// TABLE ... ADD COLUMN in the code needs its grant documented.
func TestSecurityGrants(t *testing.T) {
	doc, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	grants := section(t, string(doc), "### ClickHouse grants")
	var tables, ddl []string
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "test", "testdata", "internal", "deploy", "gen", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range systemTable.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(tables, m[1]) {
				tables = append(tables, m[1])
			}
		}
		for re, grant := range statements {
			if re.Match(b) && !slices.Contains(ddl, grant) {
				ddl = append(ddl, grant)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 3 || len(ddl) < 2 {
		t.Fatalf("found system tables %v and statements %v in the program: the scan is broken", tables, ddl)
	}
	for _, tb := range tables {
		if !strings.Contains(grants, "`system."+tb+"`") {
			t.Errorf("the program reads system.%s, which docs/SECURITY.md's grants table does not list", tb)
		}
		if !strings.Contains(grants, "ON system."+tb+" TO") {
			t.Errorf("the program reads system.%s, which docs/SECURITY.md's GRANT example does not grant", tb)
		}
	}
	for _, g := range ddl {
		if !strings.Contains(grants, g) {
			t.Errorf("the program runs %s, which docs/SECURITY.md's grants do not list", g)
		}
	}
}

// section returns the text of doc from heading to the next heading of the
// same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/SECURITY.md has no %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := strings.Repeat("#", strings.Index(heading, " "))
	for _, h := range []string{"\n" + level + " ", "\n" + level[:len(level)-1] + " "} {
		if j := strings.Index(rest, h); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}
