package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// testutilLint lints every metric the registry gathers.
func testutilLint(reg *prometheus.Registry) ([]string, error) {
	problems, err := testutil.GatherAndLint(reg)
	var out []string
	for _, p := range problems {
		out = append(out, p.Metric+": "+p.Text)
	}
	return out, err
}
