#!/usr/bin/env bash
# `make conformance`: the Kubernetes [Conformance] tests (e2e.test, hack/kube-build.sh)
# against a fresh 2-node minilab, or against CONFORMANCE_KUBECONFIG. FOCUS narrows the run
# (a Ginkgo focus regex, ANDed with the Conformance label); FOCUS_FILE instead names a file
# of exact test names, one a line, `#` comments (test/conformance/ci-subset.txt, the subset
# `make test` runs). Writes the suite's JUnit report and log under _output/conformance/
# (CONFORMANCE_OUT), with the lab's daemon logs in lab-logs/, and prints a summary per SIG
# (docs/conformance.md). CONFORMANCE_LAB names the lab, so a caller can take it down if
# this script is killed before its trap runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${CONFORMANCE_OUT:-$root/_output/conformance}
images=${MINIK8S_IMAGES:-$root/images/out}
bin=${MINIK8S_BIN:-$root/bin}
e2e=$(hack/kube-build.sh e2e.test)
if [[ -n ${FOCUS_FILE:-} ]]; then
	[[ -z ${FOCUS:-} ]] || { echo "conformance: FOCUS and FOCUS_FILE exclude each other" >&2; exit 2; }
	# Each name literally (regexp metacharacters escaped), the names joined by |.
	FOCUS=$(sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' \
		-e 's/[][\\.*^$+?(){}|]/\\&/g' "$FOCUS_FILE" | paste -sd '|')
	[[ -n $FOCUS ]] || { echo "conformance: no test names in $FOCUS_FILE" >&2; exit 2; }
fi
rm -rf "$out" && mkdir -p "$out"

# Ginkgo's own flags, given to e2e.test as --ginkgo.X or to the Ginkgo CLI as they are.
ginkgo_args=(--label-filter=Conformance --no-color --v --timeout="${CONFORMANCE_TIMEOUT:-6h}")
[[ -n ${FOCUS:-} ]] && ginkgo_args+=(--focus="$FOCUS")
[[ -n ${SKIP:-} ]] && ginkgo_args+=(--skip="$SKIP")
suite_args=(--report-dir="$out" --dump-logs-on-failure=false --kubectl-path="$(command -v kubectl)"
	--e2e-output-dir="$out")

if [[ -n ${CONFORMANCE_KUBECONFIG:-} ]]; then
	kubeconfig=$CONFORMANCE_KUBECONFIG
	in_lab=()
else
	lab=${CONFORMANCE_LAB:-conf-$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')}
	# The lab's daemon logs (miniapi, minilet, miniproxy, containerd) stay beside the
	# suite's, to explain a failure after the lab is gone.
	trap 'cp -r "/var/lib/minik8s/labs/$lab/logs" "$out/lab-logs" 2>/dev/null; "$bin"/minilab down --name "$lab" >/dev/null' EXIT
	"$bin"/minilab up --name "$lab" --nodes 2 --images-dir "$images"
	for image in "$images"/e2e/*.tar; do "$bin"/minilab image load --name "$lab" "$image"; done
	info=$("$bin"/minilab info --name "$lab" -o json)
	kubeconfig=$(sed -n 's/.*"kubeconfig": "\(.*\)",/\1/p' <<<"$info")
	netns=$(sed -n 's/.*"controlPlaneNetns": "\(.*\)",/\1/p' <<<"$info")
	# The API is reachable only from inside the lab: the suite runs in the control
	# plane's namespace (docs/conformance.md).
	in_lab=(ip netns exec "$netns")
fi
suite_args+=(--kubeconfig="$kubeconfig")

# CONFORMANCE_PROCS=N runs N e2e.test processes through the Ginkgo CLI, as Kubernetes' own
# CI does (hack/ginkgo-e2e.sh); [Serial] tests still run alone, after the others.
procs=${CONFORMANCE_PROCS:-1}
if [[ $procs -gt 1 ]]; then
	run=("${in_lab[@]}" "$(hack/kube-build.sh ginkgo)" --procs="$procs" "${ginkgo_args[@]}" "$e2e" -- "${suite_args[@]}")
else
	run=("${in_lab[@]}" "$e2e" "${suite_args[@]}" "${ginkgo_args[@]/#--/--ginkgo.}")
fi

# e2e.test's kubectl tests leave a test-kuberc* directory each in TMPDIR: the suite gets
# one of its own under $out, removed when it ends (with $out by the next run if killed).
suite_tmp=$out/tmp
mkdir "$suite_tmp"
export TMPDIR=$suite_tmp
start=$(date +%s)
echo "conformance: running e2e.test ($e2e) focus=${FOCUS_FILE:-${FOCUS:-all}} procs=$procs; log: $out/e2e.log"
set +e
"${run[@]}" 2>&1 | tee "$out/e2e.log" | awk -v start="$start" '
	# One line per finished test: Ginkgo -v ends each with "• [N seconds]", "• [FAILED] ..."
	# or "S [SKIPPED] ...".
	/^• \[FAILED\]|^• \[PANICKED\]|^• \[TIMEDOUT\]/ { f++; done=1 }
	/^• \[[0-9.]+ seconds\]/ { p++; done=1 }
	/^S \[SKIPPED\]/ { s++; done=1 }
	done { done=0; printf "conformance: %d passed, %d failed, %d skipped, %ds\n", p, f, s, systime()-start; fflush() }'
status=${PIPESTATUS[0]}
set -e
rm -rf "$suite_tmp"
unset TMPDIR
echo "conformance: e2e.test exited $status after $(( $(date +%s) - start ))s"
report=$(ls "$out"/junit*.xml 2>/dev/null | head -1)
[[ -n $report ]] || { echo "conformance: no JUnit report in $out" >&2; exit 1; }
go run ./test/conformance/summarize "$report" | tee "$out/summary.txt"
exit "$status"
