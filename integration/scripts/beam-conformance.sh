#!/usr/bin/env bash
# Runs Beam's portable-runner conformance tests from the Python wheel
# (PrismRunnerTest, pointed at our job server) against `sluice beam
# job-server`, and prints pytest's summary. A measurement, not a gate.
#
#   beam-conformance.sh [PYTEST_ARGS...]     e.g. -k test_pardo
#
# Env: BEAM_CONFORMANCE_PORT (default 28199), BEAM_CONFORMANCE_TIMEOUT per test (default 120 s).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
py="$("$HERE/beam-venv.sh" | tail -n 1)"
"$py" -m pip install --quiet pytest pytest-timeout pyhamcrest parameterized mock tenacity >&2
work="$(mktemp -d -t sluice-beam-conformance.XXXXXX)"
port="${BEAM_CONFORMANCE_PORT:-28199}"
# shellcheck source=lib-beam-job-server.sh
. "$HERE/lib-beam-job-server.sh"
beam_job_server "$ROOT" "$work" "$port"
cp "$ROOT/integration/beam/conftest.py" "$ROOT/integration/beam/test_sluice_runner.py" "$work/"
cd "$work"
SLUICE_BEAM_JOB_ENDPOINT="localhost:$port" "$py" -m pytest -q -p no:cacheprovider \
  --timeout "${BEAM_CONFORMANCE_TIMEOUT:-120}" --tb=native -rfEs \
  --test-pipeline-options=--environment_type=LOOPBACK test_sluice_runner.py "$@" || true
echo "beam-conformance: job server log in the pytest output above; server log tail:" >&2
tail -n 5 "$work/server.log" >&2
