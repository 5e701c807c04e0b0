// Package deploy holds no code: it is the home of the offline checks of the
// deployment files beside it (deploy_test.go).
//
//   - grafana/etl.json: the Grafana dashboard. Every PromQL expression in it
//     may use only metrics and labels listed in docs/METRICS.md.
//   - prometheus/alerts.yaml: the alerting rules, held to the same metric
//     rule; each alert has a severity, a summary, a description and a
//     runbook_url whose anchor is a heading of docs/RUNBOOK.md, and
//     prometheus/alerts_test.yaml tests it firing and staying quiet.
//   - kubernetes/: the ConfigMap's pipeline.yaml loads with etl's own config
//     loader given the Deployment's environment, and the Deployment's probes,
//     port and termination grace period agree with it.
//
// promtool and the strict Kubernetes schema check (kubernetes/check, its own
// module) run from scripts/check-deploy.sh.
package deploy
