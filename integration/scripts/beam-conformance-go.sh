#!/usr/bin/env bash
# Runs the Beam Go SDK's own validates-runner tests (sdks/go/test/integration,
# at the Beam version of Sluice's go.mod, from the Go module proxy) with the
# universal runner against `sluice beam job-server`, and prints a summary.
# A measurement, not a gate.
#
#   beam-conformance-go.sh [PACKAGE...]   default: primitives wordcount synthetic
#
# The tests that never end on a batch runner (an unbounded SDF drained or
# self-checkpointing, unbounded and infinite processing-time timers) and the
# one that exhausts memory on purpose (it would take the LOOPBACK harness,
# this process, with it) are skipped; everything else runs, Beam's runner
# filters included (--runner=universal applies none).
#
# Env: BEAM_CONFORMANCE_PORT (default 28198), BEAM_CONFORMANCE_TIMEOUT (go test -timeout, default 10m).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
version="$(awk '$1 == "github.com/apache/beam/sdks/v2" { print $2 }' "$ROOT/go.mod")"
[[ -n "$version" ]] || { echo "beam-conformance-go: no github.com/apache/beam/sdks/v2 in go.mod" >&2; exit 1; }
work="$(mktemp -d -t sluice-beam-conformance-go.XXXXXX)"
port="${BEAM_CONFORMANCE_PORT:-28198}"
# shellcheck source=lib-beam-job-server.sh
. "$HERE/lib-beam-job-server.sh"
beam_job_server "$ROOT" "$work" "$port"
mkdir "$work/mod"
cd "$work/mod"
printf 'module sluiceconformance\n\ngo 1.26\n\nrequire github.com/apache/beam/sdks/v2 %s\n' "$version" >go.mod
pkgs=()
[[ $# -gt 0 ]] || set -- primitives wordcount synthetic
for p in "$@"; do pkgs+=("github.com/apache/beam/sdks/v2/go/test/integration/$p"); done
GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" TMPDIR="$work" go test -count=1 -v -timeout "${BEAM_CONFORMANCE_TIMEOUT:-10m}" \
  -skip 'TestDrain|TestCheckpointing|Unbounded|Infinity|TestOomParDo' "${pkgs[@]}" \
  -args --runner=universal --endpoint="localhost:$port" --environment_type=LOOPBACK >"$work/go-test.log" 2>&1 || true
grep -E '^(ok|FAIL|---)[[:space:]]' "$work/go-test.log" | grep -v -- '--- PASS' || true
for r in PASS FAIL SKIP; do printf '%s %d\n' "$r" "$(grep -cE "^[[:space:]]*--- $r" "$work/go-test.log" || true)"; done
echo "beam-conformance-go: each failure's first lines:" >&2
grep -E 'desc =' "$work/go-test.log" | sed -e 's/^.*desc = //' -e 's/pipeline "[^"]*"/pipeline/' -e 's/transform "[^"]*"/transform/' | sort | uniq -c | sort -rn | head -n 10 >&2 || true
