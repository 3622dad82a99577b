#!/usr/bin/env bash
# Makes room for a build and a test run: the tests' containerd, bbolt and labs fail in
# obscure ways on a full disk. Go's build cache only drops entries unused for five days and
# grows by gigabytes a day on a busy host, so when the filesystem holding it has less than
# MINIK8S_MIN_FREE_GIB free, entries unused for a day (then for two hours) go first; if it
# is still short, stop here naming it.
set -euo pipefail

want=${MINIK8S_MIN_FREE_GIB:-20}
cache=$(go env GOCACHE)
mkdir -p "$cache"
free_gib() { df -P -BG "$cache" | awk 'NR == 2 { sub("G", "", $4); print $4 }'; }

for age in 1440 120; do
  (($(free_gib) >= want)) && exit 0
  echo "disk-space: $(free_gib) GiB free on $(df -P "$cache" | awk 'NR == 2 { print $6 }'), want $want: removing Go build cache entries unused for $((age / 60)) h"
  find "$cache" -type f -mmin +"$age" -delete
done
if (($(free_gib) < want / 4)); then
  echo "disk-space: only $(free_gib) GiB free on the filesystem of $cache; free some space (want $want GiB)" >&2
  exit 1
fi
