#!/usr/bin/env bash
# The fresh-host check (`make fresh-check`, run by `make test`): a host that has no kubectl
# and no busybox on PATH can follow the README.
#  1. a scratch PATH: every program of this PATH except kubectl* and busybox;
#  2. with it, `make build` into a scratch bin/ must build bin/kubectl from k8s.io/kubectl;
#  3. the README's minilab commands run as written, from the scratch tree, on a lab of
#     their own (network namespaces only: nothing touches the host's network);
#  4. an audit: a test may skip for a missing tool only through internal/testenv, which fails
#     under `make test`; every other skip must be listed below with its reason.
# Not run: `make up` itself. It runs the cluster in the host's own namespaces and on the
# host's containerd socket, which this shared test host must not have changed under it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
say() { printf '==> fresh-check: %s\n' "$*"; }
fail() { printf 'fresh-check FAILED: %s\n' "$*" >&2; exit 1; }

scratch=$(mktemp -d /tmp/minik8s-fresh.XXXXXX)
lab=fresh-$$
cleanup() {
  if [[ -x $scratch/tree/bin/minilab ]]; then "$scratch/tree/bin/minilab" down --name "$lab" >/dev/null 2>&1 || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# 1. The scratch PATH.
mkdir "$scratch/path"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [[ -d $d ]] || continue
  for f in "$d"/*; do
    n=${f##*/}
    case $n in kubectl | kubectl.* | busybox) continue ;; esac
    if [[ -f $f && -x $f && ! -e $scratch/path/$n ]]; then ln -s "$f" "$scratch/path/$n"; fi
  done
done
fresh=(env "PATH=$scratch/path")
for tool in kubectl busybox; do
  if "${fresh[@]}" bash -c "command -v $tool" >/dev/null; then fail "$tool is still on the scratch PATH"; fi
done
say "scratch PATH without kubectl and busybox: $scratch/path"

# 2. and 3. The README's minilab section, `make build` building into the scratch bin/.
readme_cmds=$(awk '/^## minilab/ {s = 1} s && /^```sh/ {b = 1; next} b && /^```/ {exit} b' README.md |
  sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d')
[[ $readme_cmds == *"make build"* && $readme_cmds == *"minilab up"* ]] ||
  fail "README.md's minilab section no longer has the commands this check runs:"$'\n'"$readme_cmds"
mkdir "$scratch/tree"
ln -s "$ROOT/images" "$scratch/tree/images" # minilab finds the images beside its bin/
while IFS= read -r cmd; do
  cmd=${cmd//--name demo/--name $lab}
  cmd=${cmd/#make build/make --no-print-directory -C $ROOT BIN=$scratch/tree/bin build}
  say "$cmd"
  (cd "$scratch/tree" && "${fresh[@]}" bash -c "$cmd") || fail "README command failed: $cmd"
  if [[ $cmd == make* ]]; then
    [[ -x $scratch/tree/bin/kubectl ]] || fail "make build left no bin/kubectl on a host without kubectl"
    version=$("$scratch/tree/bin/kubectl" version --client) || fail "bin/kubectl does not run"
    [[ $version == "Client Version: v"* ]] || fail "bin/kubectl version --client said: $version"
  fi
done <<<"$readme_cmds"
if ip netns list 2>/dev/null | grep -q "^mk-$lab-"; then fail "minilab down left namespaces of lab $lab"; fi

# 4. Skips: only through internal/testenv, or listed here with why they are not for a tool.
allowed=(
  # chattr +i needs a file system with attributes (not tmpfs or overlay); not a tool.
  'pkg/control/store/bolt_test.go:.*chattr \+i failed'
  # The cgroup v1 reader's tests on a cgroup v2 host (v2 is the library's own Stat); not a tool.
  'pkg/stats/cgroup_test.go:.*makes cgroup v1 directories'
  'pkg/stats/bench_test.go:.*makes cgroup v1 directories'
  # The memory threshold notifier is cgroup v1's; a v2 host has none (as the kubelet); not a tool.
  'pkg/agent/eviction/notifier_test.go:.*no cgroup v1 memory controller'
  # What IPVS mode does on a kernel without IPVS, asked of a kernel that has it; not a tool.
  'pkg/proxy/ipvs/host_test.go:.*this kernel has IPVS'
  # The IPVS benchmark in the VM (minutes): opt-in, as benchmarks are; not a tool.
  'pkg/proxy/ipvs/bench_vm_test.go:.*a benchmark: set'
  # The HA control plane under systemd in two VMs (16-30 min of qemu, over make test's
  # budget): opt-in with MINIK8S_VM_HA=1, run by hand (docs/systemd.md); not a tool.
  'systemd/vm_test.go:.*opt-in, about 30 minutes of two emulated VMs'
)
skips=$(grep -rnE '\.Skip(f|Now)?\(' --include='*_test.go' cmd pkg test images deploy bench systemd 2>/dev/null |
  grep -v '^internal/testenv/' || true)
for a in "${allowed[@]}"; do skips=$(grep -vE "$a" <<<"$skips" || true); done
if [[ -n $skips ]]; then
  fail "tests skip outside internal/testenv (use testenv.Missing/RequireTools so make test fails instead, or list the skip in hack/fresh-check.sh with why):"$'\n'"$skips"
fi
say "passed: no kubectl or busybox on PATH needed; every skip goes through internal/testenv"
