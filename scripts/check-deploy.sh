#!/usr/bin/env bash
# scripts/check-deploy.sh: offline checks of the deployment files.
#
#   1. promtool check rules / test rules on deploy/prometheus (the rules
#      parse, and alerts_test.yaml's cases fire and stay quiet as written);
#   2. the Grafana dashboard is valid JSON, and `go test ./deploy/` checks that
#      its queries parse (with promtool) and that they and the rules use only
#      metrics and labels from
#      docs/METRICS.md, that every alert links to a heading of
#      docs/RUNBOOK.md, and that the Kubernetes Deployment agrees with the
#      ConfigMap's pipeline.yaml (loaded with etl's own config loader);
#   3. deploy/kubernetes/check (its own Go module): every kustomization
#      under deploy/ (the base, deploy/kubernetes, and the KEDA overlay,
#      deploy/keda) builds with kustomize's own build, as `kubectl apply -k`
#      runs it; every manifest decodes strictly into its Kubernetes API type,
#      and the references between the manifests hold.
#
# Needs Go and promtool. promtool comes from Debian's `prometheus` package;
# when it is not on PATH this script extracts it from that package's .deb
# (apt-get download + dpkg-deb -x) into $ETL_TOOLS_DIR, so that no Prometheus
# service is installed or started. PROMTOOL=/path/to/promtool uses that one;
# PROMTOOL=fetch extracts Debian's even when one is on PATH.
set -euo pipefail

cd "$(dirname "$0")/.."

TOOLS_DIR=${ETL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/etl-tools}

die() {
	echo "check-deploy.sh: $*" >&2
	exit 1
}

section() {
	printf '\n== %s ==\n' "$*"
}

# fetch_promtool extracts usr/bin/promtool from Debian's prometheus package
# into $TOOLS_DIR and prints its path.
fetch_promtool() {
	local bin=$TOOLS_DIR/prometheus/usr/bin/promtool
	if [[ -x $bin ]]; then
		echo "$bin"
		return
	fi
	command -v apt-get >/dev/null 2>&1 || die "promtool is missing and apt-get is not available: install Debian's prometheus package, or set PROMTOOL"
	command -v dpkg-deb >/dev/null 2>&1 || die "promtool is missing and dpkg-deb is not available"
	local tmp
	tmp=$(mktemp -d)
	chmod 0777 "$tmp" # apt-get download writes as the _apt user when it can
	echo "check-deploy.sh: extracting promtool from Debian's prometheus package into $TOOLS_DIR" >&2
	if ! (cd "$tmp" && apt-get download -q prometheus >&2); then
		# No package lists yet: they need root.
		local sudo=()
		if ((EUID != 0)); then
			command -v sudo >/dev/null 2>&1 || die "apt-get download prometheus failed and apt-get update needs root (no sudo found)"
			sudo=(sudo)
		fi
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || die "apt-get update failed"
		(cd "$tmp" && apt-get download -q prometheus >&2) || die "apt-get download prometheus failed"
	fi
	mkdir -p "$TOOLS_DIR/prometheus"
	dpkg-deb -x "$tmp"/prometheus_*.deb "$TOOLS_DIR/prometheus" || die "dpkg-deb -x failed"
	rm -rf "$tmp"
	[[ -x $bin ]] || die "$bin is missing after extracting the package"
	echo "$bin"
}

promtool=${PROMTOOL:-}
if [[ $promtool == fetch ]]; then
	promtool=$(fetch_promtool)
elif [[ -z $promtool ]]; then
	promtool=$(command -v promtool || true)
	[[ -n $promtool ]] || promtool=$(fetch_promtool)
fi
command -v go >/dev/null 2>&1 || die "go is not on PATH"

section "promtool ($("$promtool" --version 2>&1 | head -1))"
"$promtool" check rules deploy/prometheus/alerts.yaml
# test rules resolves rule_files relative to the test file.
"$promtool" test rules deploy/prometheus/alerts_test.yaml

section "Grafana dashboard"
if command -v python3 >/dev/null 2>&1; then
	python3 -m json.tool deploy/grafana/etl.json >/dev/null
	echo "deploy/grafana/etl.json: valid JSON"
fi
# Parses the dashboard and the rules and checks them against docs/METRICS.md,
# docs/RUNBOOK.md and the Kubernetes manifests.
# PROMTOOL: also parse every dashboard query with promtool.
PROMTOOL=$promtool go test -count=1 ./deploy/

section "Kubernetes manifests (deploy/kubernetes/check)"
(cd deploy/kubernetes/check && go test -count=1 ./...)

section "Done"
echo "check-deploy.sh: all deployment checks passed"
