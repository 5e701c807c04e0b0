package e2e

import (
	"bufio"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads etl's /metrics and returns each metric's value summed over
// its label sets (histograms by their _sum and _count series).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	m, err := scrapeErr(addr)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return m
}

// scrapeIfUp is scrape for a process that may not listen yet: it returns
// nothing when /metrics does not answer.
func scrapeIfUp(addr string) map[string]float64 {
	m, _ := scrapeErr(addr)
	return m
}

func scrapeErr(addr string) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			if j := strings.LastIndexByte(line, '}'); j >= 0 {
				rest = strings.TrimSpace(line[j+1:])
			}
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue // a line cut off by a process that died mid-answer
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

// rssBytes is a process's resident set size.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
