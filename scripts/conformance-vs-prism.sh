#!/bin/sh
# Runs the conformance suite against a Prism mock of the description, as a peer
# comparison: a mock that answers from the description's examples and validates requests
# against its schemas, but has no behaviour (no tokens, state, idempotency or webhooks).
#
#   sh scripts/conformance-vs-prism.sh [extra payment-conformance run flags]
#
# Prism is fetched on demand with npx (not a project dependency). Prism has no test
# controls, so the suite runs from a --config profile with placeholder credentials and
# no adapter capability: every check that needs one (clock, faults, payments, webhooks,
# organisations of other settings) is skipped, naming it. Reports go to reports/prism/.
# A run with no extra flag also writes what it found to test/measured/conformance-vs-prism.md
# (with the date, the suite's and Prism's versions), which the test documentation links.
set -eu
cd "$(dirname "$0")/.."
PORT="${PRISM_PORT:-4099}"
OUT="${OUT:-reports/prism}"
mkdir -p "$OUT"

npx -y @stoplight/prism-cli@5.14.x mock --host 127.0.0.1 --port "$PORT" generated/openapi.json >"$OUT/prism.log" 2>&1 &
PRISM=$!
# npx starts Prism as a child of its own: stop the whole tree under the process we started.
killtree() {
  for child in $(pgrep -P "$1" 2>/dev/null); do killtree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'killtree "$PRISM"' EXIT INT TERM

# Wait for the mock to answer (the first run downloads Prism).
i=0
until curl -s -o /dev/null "http://127.0.0.1:$PORT/api/checkout-sessions/cs_probe"; do
  i=$((i + 1))
  if [ "$i" -gt 300 ]; then echo "Prism did not start; see $OUT/prism.log" >&2; exit 2; fi
  sleep 1
done

# Two profiles with placeholder credentials: Prism accepts any.
cat >"$OUT/profiles.json" <<'JSON'
{ "profiles": [
  { "name": "primary", "clientId": "ck_test_prism_a", "clientSecret": "sk_prism_a" },
  { "name": "secondary", "clientId": "ck_test_prism_b", "clientSecret": "sk_prism_b" }
] }
JSON

status=0
node conformance/dist/cli.js run --base-url "http://127.0.0.1:$PORT" --config "$OUT/profiles.json" \
  --reporter console,json,junit,html --out "$OUT" "$@" || status=$?
echo "payment-conformance exit status against Prism: $status"

if [ "$#" -eq 0 ] && [ -f "$OUT/conformance.json" ]; then
  PRISM_VERSION=$(npx -y @stoplight/prism-cli@5.14.x --version 2>/dev/null | tail -n 1)
  mkdir -p test/measured
  node - "$OUT/conformance.json" "$PRISM_VERSION" "$status" >test/measured/conformance-vs-prism.md <<'JS'
const [file, prism, status] = process.argv.slice(2);
const report = JSON.parse(require('node:fs').readFileSync(file, 'utf8'));
const ids = (pick) => report.results.filter(pick).map((r) => r.id).join(', ') || 'none';
const counts = Object.entries(report.summary).map(([s, n]) => `${n} ${s}`).join(', ');
const skippedFor = Object.entries(report.coverage.skippedFor).map(([c, n]) => `${c} ${n}`).join(', ');
console.log(`<!-- Written by \`sh scripts/conformance-vs-prism.sh\`. Do not edit: run it again. -->

# The suite against a Prism mock of the description

Measured ${report.startedAt.slice(0, 10)} with payment-conformance ${report.tool.version} (clause register ${report.tool.clauseRegisterVersion}) and Prism ${prism}, from a \`--config\` profile with placeholder credentials (no adapter capability).

- exit status ${status}: ${counts}, of ${report.results.length} checks; ${report.coverage.judged} judged
- failed, \`must\`: ${ids((r) => r.status === 'failed' && r.level === 'must')}
- failed, \`should\`: ${ids((r) => r.status === 'failed' && r.level !== 'must')}
- differs from our modelling: ${ids((r) => r.status === 'differs')}
- passed: ${ids((r) => r.status === 'passed')}
- error: ${ids((r) => r.status === 'error')}
- skipped, by the capability missing: ${skippedFor || 'none'}${report.coverage.skippedOther ? `; for other reasons: ${report.coverage.skippedOther}` : ''}`);
JS
fi
exit "$status"
