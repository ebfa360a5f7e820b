#!/usr/bin/env bash
# Runs a command on a slowed machine: beside it, BUSY processes (default 1) each keep a core
# busy for as long as the command runs, as other jobs on a shared CI runner would.
#
#   bash scripts/slowed.sh [BUSY] COMMAND...
#   bash scripts/slowed.sh 1 npm test
#   d=$(mktemp -d) && git clone -q . "$d" && (cd "$d" && bash scripts/slowed.sh 1 bash .ci/run)
#
# It needs nothing but bash and node, so it runs in a fresh clone before `npm ci`.
set -euo pipefail

busy=1
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  busy=$1
  shift
fi
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/slowed.sh [BUSY] COMMAND..." >&2
  exit 2
fi

pids=()
stop() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 "$busy"); do
  node -e 'for (;;);' &
  pids+=($!)
done
echo "slowed: $busy busy process(es) beside: $*" >&2

status=0
"$@" || status=$?
exit "$status"
