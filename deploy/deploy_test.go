package deploy

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/etl-project/etl/config"
)

// Paths, relative to this package.
const (
	metricsDoc     = "../docs/METRICS.md"
	runbookDoc     = "../docs/RUNBOOK.md"
	dashboardFile  = "grafana/etl.json"
	alertsFile     = "prometheus/alerts.yaml"
	alertTestsFile = "prometheus/alerts_test.yaml"
	configMapFile  = "kubernetes/configmap.yaml"
	deploymentFile = "kubernetes/deployment.yaml"
	podMonitorFile = "kubernetes/podmonitor.yaml"
	dockerfile     = "../Dockerfile"
)

// ---------------------------------------------------------------------------
// The documented metrics

// metric is one row of a table in docs/METRICS.md.
type metric struct {
	typ    string // counter, gauge, histogram
	labels []string
}

// catalogue is what docs/METRICS.md documents.
type catalogue struct {
	metrics  map[string]metric
	prefixes []string // families documented by prefix (`go_*`, `process_*`)
	common   []string // labels every etl_* series carries beyond its table's
}

// commonLabels are the labels METRICS.md says every etl_* series carries
// beyond those its tables list ("Every `etl_*` series carries two labels
// ..."). loadCatalogue checks that the document still says so.
var commonLabels = []string{"pipeline", "component"}

var (
	metricRow  = regexp.MustCompile("^\\|\\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\\s*\\|\\s*([a-z]+)\\s*\\|([^|]*)\\|")
	backticked = regexp.MustCompile("`([^`]+)`")
	prefixRef  = regexp.MustCompile("`([a-z]+_)\\*`")
)

func loadCatalogue(t *testing.T) catalogue {
	t.Helper()
	data, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	c := catalogue{metrics: map[string]metric{}}
	// The paragraph naming the labels common to every etl_* series.
	if _, rest, ok := strings.Cut(string(data), "Every `etl_*` series carries"); ok {
		para, _, _ := strings.Cut(rest, "\n\n")
		for _, l := range commonLabels {
			if strings.Contains(para, "`"+l+"`") {
				c.common = append(c.common, l)
			} else {
				t.Errorf("%s no longer says every etl_* series carries `%s`; update commonLabels in this test", metricsDoc, l)
			}
		}
	} else {
		t.Errorf("%s: no paragraph \"Every `etl_*` series carries ...\" naming the common labels; update commonLabels in this test", metricsDoc)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m := metricRow.FindStringSubmatch(line); m != nil {
			var labels []string
			for _, l := range backticked.FindAllStringSubmatch(m[3], -1) {
				labels = append(labels, l[1])
			}
			c.metrics[m[1]] = metric{typ: m[2], labels: labels}
			continue
		}
		for _, p := range prefixRef.FindAllStringSubmatch(line, -1) {
			// `etl_*` is how the document names our own metrics, each of
			// which has its row; only other families count as documented by
			// prefix (the Go runtime and process collectors).
			if p[1] != "etl_" && !slices.Contains(c.prefixes, p[1]) {
				c.prefixes = append(c.prefixes, p[1])
			}
		}
	}
	if !slices.Contains(c.prefixes, "go_") || !slices.Contains(c.prefixes, "process_") {
		t.Errorf("%s: expected `go_*` and `process_*` to be documented as the standard collectors; got prefixes %v", metricsDoc, c.prefixes)
	}
	if len(c.metrics) < 10 {
		t.Fatalf("%s: found only %d metrics in its tables; has the table format changed?", metricsDoc, len(c.metrics))
	}
	return c
}

// targetLabels are attached by Prometheus at scrape time (and by the
// PodMonitor), not by etl: any selector may use them.
var targetLabels = []string{"instance", "job", "namespace", "pod", "container", "endpoint", "service"}

// check returns what is wrong with one selector, or "".
func (c catalogue) check(s selector, recorded map[string]bool) string {
	if recorded[s.name] {
		return ""
	}
	if s.name == "up" {
		return c.checkLabels(s, nil)
	}
	if m, ok := c.metrics[s.name]; ok {
		return c.checkLabels(s, append(slices.Clone(m.labels), c.common...))
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(s.name, suffix)
		if !found {
			continue
		}
		if m, ok := c.metrics[base]; ok {
			if m.typ != "histogram" {
				return fmt.Sprintf("%s: %s is a %s in %s, not a histogram", s.name, base, m.typ, metricsDoc)
			}
			labels := append(slices.Clone(m.labels), c.common...)
			if suffix == "_bucket" {
				labels = append(labels, "le")
			}
			return c.checkLabels(s, labels)
		}
	}
	for _, p := range c.prefixes {
		if strings.HasPrefix(s.name, p) {
			return "" // the Go runtime and process collectors: labels not listed
		}
	}
	if strings.Contains(s.name, ":") {
		return fmt.Sprintf("%s: a recording rule name that no rule in %s records", s.name, alertsFile)
	}
	return fmt.Sprintf("metric %s is not documented in %s", s.name, metricsDoc)
}

func (c catalogue) checkLabels(s selector, allowed []string) string {
	for _, l := range s.labels {
		if !slices.Contains(allowed, l) && !slices.Contains(targetLabels, l) {
			return fmt.Sprintf("%s has no label %q in %s (its labels: %v)", s.name, l, metricsDoc, allowed)
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// A small PromQL scanner: finds the metric selectors of an expression
// (name and the label names of its matchers). It does not validate syntax;
// promtool does that for the rules (scripts/check-deploy.sh).

type selector struct {
	name   string
	labels []string
}

// notMetrics are the identifiers of PromQL that are not metric names when
// they are not followed by "(" (aggregations may be: `sum by (x) (...)`).
var notMetrics = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true, "start": true, "end": true,
}

// labelLists are keywords followed by a parenthesised list of label names.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// grafanaVar matches Grafana template variables: $var, ${var}, ${var:fmt}, $__rate_interval.
var grafanaVar = regexp.MustCompile(`\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

func isIdentStart(c byte) bool { return c == '_' || c == ':' || unicode.IsLetter(rune(c)) }
func isIdent(c byte) bool      { return isIdentStart(c) || (c >= '0' && c <= '9') }

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' && q != '`' {
			j++
			continue
		}
		if s[j] == q {
			return j + 1
		}
	}
	return len(s)
}

// skipGroup returns the index after the bracket that closes the one at i.
func skipGroup(s string, i int, open, close byte) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"' || c == '\'' || c == '`':
			j = skipString(s, j) - 1
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// matcherLabels returns the label names of the matchers in s[i:] ("{...}")
// and the index after the closing brace.
func matcherLabels(s string, i int) ([]string, int) {
	end := skipGroup(s, i, '{', '}')
	var labels []string
	for j := i + 1; j < end-1; {
		c := s[j]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j = skipString(s, j)
		case isIdentStart(c):
			k := j
			for k < end && isIdent(s[k]) {
				k++
			}
			if n := skipSpace(s, k); n < end && (s[n] == '=' || s[n] == '!') {
				labels = append(labels, s[j:k])
			}
			j = k
		default:
			j++
		}
	}
	return labels, end
}

func selectors(expr string) []selector {
	s := grafanaVar.ReplaceAllString(expr, "")
	var out []selector
	lastEnd := -1 // end of the last metric name, for a following "{"
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '[':
			i = skipGroup(s, i, '[', ']')
		case c == '{':
			labels, end := matcherLabels(s, i)
			if lastEnd >= 0 && strings.TrimSpace(s[lastEnd:i]) == "" {
				out[len(out)-1].labels = labels
			} else {
				out = append(out, selector{name: "{" + strings.Join(labels, ",") + "}"})
			}
			i = end
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.' ||
				((s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E'))) {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			id := s[i:j]
			next := skipSpace(s, j)
			switch {
			case labelLists[id] && next < len(s) && s[next] == '(':
				i = skipGroup(s, next, '(', ')')
				continue
			case notMetrics[id], labelLists[id], next < len(s) && s[next] == '(':
				// an operator, keyword or function
			default:
				out = append(out, selector{name: id})
				i = j
				lastEnd = j
				continue
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func TestSelectorScanner(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (topic, partition) (rate(etl_a_total{instance=~"$instance", x!="a{b}"}[$__rate_interval])) / on (job) group_left (pipeline) etl_b`: "etl_a_total{instance,x} etl_b{}",
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket{outcome="ok"}[5m]))) > 1e-3 and up == 0`:                                              "h_bucket{outcome} up{}",
		`max without (state) (s{state="stalled"}) == 1 or absent(up{job="etl"}) # comment etl_c`:                                                   "s{state} up{job}",
		"sum by (i, r) (rate(d[15m]))\n/ on (i) group_left\nsum by (i) (rate(e[15m])) > 0.01":                                                      "d{} e{}",
		`deriv(a:b:sum[30m]) > 0 and a:b:sum offset 5m > 1e5`:                                                                                      "a:b:sum{} a:b:sum{}",
	} {
		var got []string
		for _, s := range selectors(expr) {
			got = append(got, s.name+"{"+strings.Join(s.labels, ",")+"}")
		}
		if strings.Join(got, " ") != want {
			t.Errorf("selectors(%s)\n got %s\nwant %s", expr, strings.Join(got, " "), want)
		}
	}
}

// problems collects findings as "where: what", grouped by what so that a
// missing metric is named once with every place that uses it.
type problems map[string][]string

func (p problems) add(what, where string) { p[what] = append(p[what], where) }

func (p problems) report(t *testing.T) {
	t.Helper()
	whats := make([]string, 0, len(p))
	for w := range p {
		whats = append(whats, w)
	}
	sort.Strings(whats)
	for _, w := range whats {
		t.Errorf("%s\n\tused by: %s", w, strings.Join(p[w], "\n\t         "))
	}
}

// ---------------------------------------------------------------------------
// Dashboard

type gridPos struct{ H, W, X, Y int }

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int      `json:"id"`
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	GridPos    *gridPos `json:"gridPos"`
	Datasource *dsRef   `json:"datasource"`
	Targets    []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *dsRef          `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string `json:"name"`
			Expr       string `json:"expr"`
			Datasource *dsRef `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// TestDashboardMetrics: every PromQL expression of the dashboard (panels,
// annotations, template variables) uses only documented metrics and labels.
func TestDashboardMetrics(t *testing.T) {
	cat := loadCatalogue(t)
	d := loadDashboard(t)
	bad := problems{}
	checkExpr := func(expr, where string) {
		for _, s := range selectors(expr) {
			if msg := cat.check(s, nil); msg != "" {
				bad.add(msg, where)
			}
		}
	}
	n := 0
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			n++
			checkExpr(tg.Expr, fmt.Sprintf("%s: panel %q (id %d) target %s", dashboardFile, p.Title, p.ID, tg.RefID))
		}
	}
	if n == 0 {
		t.Fatalf("%s: no panel has a query", dashboardFile)
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			checkExpr(a.Expr, fmt.Sprintf("%s: annotation %q", dashboardFile, a.Name))
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Definition
		var obj struct{ Query string }
		if json.Unmarshal(v.Query, &obj) == nil && obj.Query != "" {
			q = obj.Query
		} else {
			_ = json.Unmarshal(v.Query, &q)
		}
		where := fmt.Sprintf("%s: template variable %q", dashboardFile, v.Name)
		if m := labelValues.FindStringSubmatch(q); m != nil {
			sels := selectors(m[1])
			checkExpr(m[1], where)
			for _, s := range sels {
				if s.name == "etl_pipeline_info" || cat.metrics[s.name].labels != nil {
					if msg := cat.check(selector{name: s.name, labels: []string{m[2]}}, nil); msg != "" {
						bad.add(msg, where)
					}
				}
			}
			continue
		}
		checkExpr(q, where)
	}
	bad.report(t)
}

// TestDashboardQueriesParse: every query of the dashboard, with Grafana's
// variables replaced by sample values, parses as PromQL. The queries are
// written into a rules file as recording rules and checked with promtool
// check rules. Skipped without promtool (scripts/check-deploy.sh sets
// PROMTOOL).
func TestDashboardQueriesParse(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Skip("promtool not found (set PROMTOOL): the dashboard's queries are not parsed")
	}
	d := loadDashboard(t)
	type rec struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rec
	where := map[string]string{}
	add := func(expr, w string) {
		e := regexp.MustCompile(`\$__[A-Za-z_]+`).ReplaceAllString(expr, "1m")
		e = grafanaVar.ReplaceAllString(e, "x")
		name := fmt.Sprintf("dashboard:query_%d", len(rules)+1)
		rules = append(rules, rec{Record: name, Expr: e})
		where[name] = w
	}
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			add(tg.Expr, fmt.Sprintf("panel %q (id %d) target %s", p.Title, p.ID, tg.RefID))
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			add(a.Expr, fmt.Sprintf("annotation %q", a.Name))
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		var names []string
		for _, r := range rules {
			names = append(names, r.Record+": "+where[r.Record])
		}
		t.Errorf("%s: promtool check rules on the dashboard's queries failed: %v\n%s\nqueries (rule n is dashboard:query_n):\n\t%s",
			dashboardFile, err, res, strings.Join(names, "\n\t"))
	}
}

// TestDashboardShape: the data source is a variable, the pipeline and
// instance variables exist, ids are unique and panels do not overlap.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: uid and title are required", dashboardFile)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("%s: schemaVersion %d; want a current one (39)", dashboardFile, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("%s: template variable %q must query the ${datasource} variable", dashboardFile, v.Name)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "pipeline": "query", "instance": "query"} {
		if vars[name] != typ {
			t.Errorf("%s: want a template variable %q of type %s, got %q", dashboardFile, name, typ, vars[name])
		}
	}
	ids := map[int]string{}
	cells := map[[2]int]string{}
	for _, p := range flatten(d.Panels) {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("%s: panel %q has id %d, already used by %q (or zero)", dashboardFile, p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos == nil {
			t.Errorf("%s: panel %q has no gridPos", dashboardFile, p.Title)
			continue
		}
		g := p.GridPos
		if g.X < 0 || g.W <= 0 || g.X+g.W > 24 || g.H <= 0 {
			t.Errorf("%s: panel %q gridPos %+v outside the 24-column grid", dashboardFile, p.Title, *g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, taken := cells[[2]int{x, y}]; taken {
					t.Errorf("%s: panel %q overlaps %q", dashboardFile, p.Title, other)
					x, y = g.X+g.W, g.Y+g.H
					continue
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: panel %q must use the ${datasource} variable", dashboardFile, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				t.Errorf("%s: panel %q target %s must use the ${datasource} variable", dashboardFile, p.Title, tg.RefID)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Alerts

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", alertsFile)
	}
	return out
}

// TestAlertMetrics: the rules use only documented metrics and labels (and
// the recording rules of the same file).
func TestAlertMetrics(t *testing.T) {
	cat := loadCatalogue(t)
	rules := loadRules(t)
	recorded := map[string]bool{}
	for _, r := range rules {
		if r.Record != "" {
			recorded[r.Record] = true
		}
	}
	bad := problems{}
	for _, r := range rules {
		name := r.Alert
		if name == "" {
			name = "record " + r.Record
		}
		for _, s := range selectors(r.Expr) {
			if msg := cat.check(s, recorded); msg != "" {
				bad.add(msg, fmt.Sprintf("%s: %s", alertsFile, name))
			}
		}
	}
	bad.report(t)
}

// githubAnchors returns the anchors GitHub gives the headings of a
// Markdown file.
func githubAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// TestAlertsAreComplete: every alert has for, a severity, a summary, a
// description and a runbook_url whose anchor is a heading of RUNBOOK.md.
func TestAlertsAreComplete(t *testing.T) {
	anchors := githubAnchors(t, runbookDoc)
	names := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		where := fmt.Sprintf("%s: alert %s", alertsFile, r.Alert)
		if names[r.Alert] {
			t.Errorf("%s: the name is used twice", where)
		}
		names[r.Alert] = true
		if r.For == "" {
			t.Errorf("%s: no `for:`", where)
		}
		switch r.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity label %q; want critical, warning or info", where, r.Labels["severity"])
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[k]) == "" {
				t.Errorf("%s: no %s annotation", where, k)
			}
		}
		url := r.Annotations["runbook_url"]
		doc, anchor, ok := strings.Cut(url, "#")
		switch {
		case !ok || !strings.HasSuffix(doc, "docs/RUNBOOK.md"):
			t.Errorf("%s: runbook_url %q must point at docs/RUNBOOK.md#<anchor>", where, url)
		case !anchors[anchor]:
			t.Errorf("%s: runbook_url anchor #%s is not a heading of %s", where, anchor, runbookDoc)
		}
	}
}

// TestEveryAlertIsUnitTested: alerts_test.yaml has, for every alert, a case
// where it fires and one where it must not.
func TestEveryAlertIsUnitTested(t *testing.T) {
	data, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name      string `yaml:"name"`
			AlertRule []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	if !slices.Contains(f.RuleFiles, filepath.Base(alertsFile)) {
		t.Errorf("%s: rule_files must include %s", alertTestsFile, filepath.Base(alertsFile))
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRule {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		if !fires[r.Alert] {
			t.Errorf("%s: no case where %s fires", alertTestsFile, r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s: no case where %s stays quiet", alertTestsFile, r.Alert)
		}
	}
}

// ---------------------------------------------------------------------------
// Kubernetes

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string    `yaml:"name"`
		Value     *string   `yaml:"value"`
		ValueFrom yaml.Node `yaml:"valueFrom"`
	} `yaml:"env"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type deployment struct {
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int64      `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				Volumes                       []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name  string `yaml:"name"`
						Items []struct {
							Key  string `yaml:"key"`
							Path string `yaml:"path"`
						} `yaml:"items"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type pipelineSetup struct {
	dep     deployment
	etl     *container
	cmName  string
	cmFile  string // the ConfigMap's key holding pipeline.yaml
	cfg     *config.Config
	cfgName string
}

func loadYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// loadSetup reads the Deployment and loads the ConfigMap's pipeline file
// with etl's own loader, with the environment the Deployment gives the
// container: plain values as written, values from Secrets as placeholders.
// A ${VAR} without a default that the Deployment does not set fails here,
// as it would in the pod.
func loadSetup(t *testing.T) *pipelineSetup {
	t.Helper()
	s := &pipelineSetup{}
	loadYAML(t, deploymentFile, &s.dep)
	for i := range s.dep.Spec.Template.Spec.Containers {
		if c := &s.dep.Spec.Template.Spec.Containers[i]; c.Name == "etl" {
			s.etl = c
		}
	}
	if s.etl == nil {
		t.Fatalf("%s: no container named etl", deploymentFile)
	}
	var cm struct {
		Kind     string `yaml:"kind"`
		Metadata struct{ Name string }
		Data     map[string]string `yaml:"data"`
	}
	loadYAML(t, configMapFile, &cm)
	s.cmName = cm.Metadata.Name
	s.cmFile = "pipeline.yaml"
	text, ok := cm.Data[s.cmFile]
	if cm.Kind != "ConfigMap" || !ok {
		t.Fatalf("%s: want a ConfigMap with a %s key", configMapFile, s.cmFile)
	}
	env := map[string]string{}
	for _, e := range s.etl.Env {
		switch {
		case e.Value != nil:
			env[e.Name] = *e.Value
		case !e.ValueFrom.IsZero():
			env[e.Name] = "from-" + e.Name // a Secret or field reference
		default:
			env[e.Name] = ""
		}
	}
	s.cfgName = configMapFile + " [" + s.cmFile + "]"
	cfg, err := config.Parse([]byte(text), s.cfgName, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatalf("%s does not load with the environment %s gives the container:\n%v", s.cfgName, deploymentFile, err)
	}
	s.cfg = cfg
	return s
}

func TestConfigMapLoads(t *testing.T) {
	s := loadSetup(t)
	if s.cfg.Metrics.Listen == config.MetricsOff {
		t.Errorf("%s: metrics.listen is off; the probes and Prometheus need it", s.cfgName)
	}
}

// TestDeploymentAgreesWithConfig: the probes hit /healthz and /readyz on
// the port metrics.listen opens, on an address the kubelet can reach; the
// grace period outlasts the drain; -config names the mounted file.
func TestDeploymentAgreesWithConfig(t *testing.T) {
	s := loadSetup(t)
	host, portStr, err := net.SplitHostPort(s.cfg.Metrics.Listen)
	if err != nil {
		t.Fatalf("%s: metrics.listen %q: %v", s.cfgName, s.cfg.Metrics.Listen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		t.Errorf("%s: metrics.listen %q is loopback only: the kubelet's probes and Prometheus cannot reach it", s.cfgName, s.cfg.Metrics.Listen)
	}
	port, _ := strconv.Atoi(portStr)

	resolve := func(p any) int {
		switch v := p.(type) {
		case int:
			return v
		case string:
			for _, cp := range s.etl.Ports {
				if cp.Name == v {
					return cp.ContainerPort
				}
			}
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return -1
	}
	declared := false
	for _, cp := range s.etl.Ports {
		declared = declared || cp.ContainerPort == port
	}
	if !declared {
		t.Errorf("%s: the etl container declares no containerPort %d (metrics.listen in %s)", deploymentFile, port, s.cfgName)
	}
	for _, pc := range []struct {
		name  string
		p     *probe
		path  string
		must  bool
		about string
	}{
		{"livenessProbe", s.etl.LivenessProbe, "/healthz", true, "the poll loop is alive and no partition is stalled"},
		{"readinessProbe", s.etl.ReadinessProbe, "/readyz", true, "the pipeline is ready"},
		{"startupProbe", s.etl.StartupProbe, "/healthz", false, "the process is up"},
	} {
		switch {
		case pc.p == nil && pc.must:
			t.Errorf("%s: no %s (want httpGet %s: %s)", deploymentFile, pc.name, pc.path, pc.about)
		case pc.p == nil:
		case pc.p.HTTPGet == nil:
			t.Errorf("%s: %s must be an httpGet probe on %s", deploymentFile, pc.name, pc.path)
		default:
			if pc.p.HTTPGet.Path != pc.path {
				t.Errorf("%s: %s path %q, want %s (%s)", deploymentFile, pc.name, pc.p.HTTPGet.Path, pc.path, pc.about)
			}
			if got := resolve(pc.p.HTTPGet.Port); got == -1 {
				t.Errorf("%s: %s port %v is not a port of the etl container", deploymentFile, pc.name, pc.p.HTTPGet.Port)
			} else if got != port {
				t.Errorf("%s: %s port %v is %d, but metrics.listen in %s is %q", deploymentFile, pc.name, pc.p.HTTPGet.Port, got, s.cfgName, s.cfg.Metrics.Listen)
			}
		}
	}

	grace := int64(30) // the Kubernetes default
	if g := s.dep.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	drain := s.cfg.Checkpoint.DrainTimeout.D()
	if time.Duration(grace)*time.Second <= drain {
		t.Errorf("%s: terminationGracePeriodSeconds %d must be above checkpoint.drain_timeout %s (%s), or the kubelet kills the drain",
			deploymentFile, grace, drain, s.cfgName)
	}

	// -config names the ConfigMap's file where it is mounted.
	path := ""
	for i, a := range s.etl.Args {
		if a == "-config" || a == "--config" {
			if i+1 < len(s.etl.Args) {
				path = s.etl.Args[i+1]
			}
		} else if v, ok := strings.CutPrefix(a, "-config="); ok {
			path = v
		}
	}
	if path == "" {
		t.Fatalf("%s: the etl container's args have no -config", deploymentFile)
	}
	found := false
	for _, v := range s.dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil || v.ConfigMap.Name != s.cmName {
			continue
		}
		for _, vm := range s.etl.VolumeMounts {
			if vm.Name != v.Name {
				continue
			}
			file := s.cmFile
			for _, it := range v.ConfigMap.Items {
				if it.Key == s.cmFile {
					file = it.Path
				}
			}
			if vm.SubPath == "" && filepath.Join(vm.MountPath, file) == path {
				found = true
			}
			if vm.SubPath != "" && vm.MountPath == path {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("%s: -config %s is not where ConfigMap %s's %s is mounted", deploymentFile, path, s.cmName, s.cmFile)
	}
}

// TestScrapeJobMatchesAlerts: the job label the PodMonitor gives the
// targets is the one the alerts select with up{job="..."}.
func TestScrapeJobMatchesAlerts(t *testing.T) {
	s := loadSetup(t)
	var pm struct {
		Spec struct {
			JobLabel string `yaml:"jobLabel"`
		} `yaml:"spec"`
	}
	loadYAML(t, podMonitorFile, &pm)
	if pm.Spec.JobLabel == "" {
		t.Skipf("%s sets no jobLabel: the job is namespace/name", podMonitorFile)
	}
	job := s.dep.Spec.Template.Metadata.Labels[pm.Spec.JobLabel]
	if job == "" {
		t.Fatalf("%s: jobLabel %s is not a label of the pods in %s", podMonitorFile, pm.Spec.JobLabel, deploymentFile)
	}
	upJob := regexp.MustCompile(`\bup\{[^}]*\bjob="([^"]*)"`)
	for _, r := range loadRules(t) {
		for _, m := range upJob.FindAllStringSubmatch(r.Expr, -1) {
			if m[1] != job {
				t.Errorf("%s: %s selects up{job=%q}, but the PodMonitor's targets have job=%q", alertsFile, r.Alert, m[1], job)
			}
		}
	}
}

// TestDockerfileExposesMetricsPort: the image exposes the metrics port.
func TestDockerfileExposesMetricsPort(t *testing.T) {
	s := loadSetup(t)
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(s.cfg.Metrics.Listen)
	if !regexp.MustCompile(`(?m)^EXPOSE\s+(.*\s)?` + regexp.QuoteMeta(port) + `(/tcp)?(\s|$)`).Match(data) {
		t.Errorf("%s: no EXPOSE %s (metrics.listen in %s)", dockerfile, port, s.cfgName)
	}
}
