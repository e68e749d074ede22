#!/usr/bin/env bash
# Creates (once) a Python virtualenv with the Apache Beam Python SDK that the Beam runner's
# integration tests drive, and prints its python interpreter's path on the last line of stdout.
#
#   beam-venv.sh            # build if missing, print the interpreter
#
# The venv lives outside the repository, under ${SLUICE_BEAM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/beam-venv-$BEAM_VERSION}.
# It is rebuilt when its READY marker is missing (a half-finished install is not reused).
# Needs python3.11 (or PYTHON=...) and network access to PyPI on the first run (a few minutes).
set -euo pipefail
BEAM_VERSION="${BEAM_VERSION:-2.77.0}"
PY="${PYTHON:-python3.11}"
VENV="${SLUICE_BEAM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/beam-venv-$BEAM_VERSION}"
die() { echo "beam-venv: $*" >&2; exit 1; }

if [[ -f "$VENV/READY" && -x "$VENV/bin/python" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
command -v "$PY" >/dev/null || die "$PY is required (set PYTHON to another interpreter >= 3.10)"
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
echo "beam-venv: creating $VENV with apache-beam==$BEAM_VERSION (first run only)" >&2
"$PY" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
"$VENV/bin/python" -m pip install --quiet "apache-beam==$BEAM_VERSION" >&2
"$VENV/bin/python" -c 'import apache_beam, sys; print("beam-venv: apache_beam", apache_beam.__version__, file=sys.stderr)'
touch "$VENV/READY"
echo "$VENV/bin/python"
