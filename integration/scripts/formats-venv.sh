#!/usr/bin/env bash
# Creates (once) a Python virtualenv with fastavro, the independent Avro implementation the
# formats' interoperability tests write and read records with, and prints its python
# interpreter's path on the last line of stdout.
#
#   formats-venv.sh            # build if missing, print the interpreter
#
# The venv lives outside the repository, under
# ${SLUICE_FORMATS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/formats-venv-$FASTAVRO_VERSION}.
# It is rebuilt when its READY marker is missing. Needs python3.11 (or PYTHON=...) and PyPI on
# the first run.
set -euo pipefail
FASTAVRO_VERSION="${FASTAVRO_VERSION:-1.13.1}"
PY="${PYTHON:-python3.11}"
VENV="${SLUICE_FORMATS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/formats-venv-$FASTAVRO_VERSION}"
die() { echo "formats-venv: $*" >&2; exit 1; }

if [[ -f "$VENV/READY" && -x "$VENV/bin/python" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
command -v "$PY" >/dev/null || die "$PY is required (set PYTHON to another interpreter >= 3.9)"
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
echo "formats-venv: creating $VENV with fastavro==$FASTAVRO_VERSION (first run only)" >&2
"$PY" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --quiet "fastavro==$FASTAVRO_VERSION" >&2
"$VENV/bin/python" -c 'import fastavro, sys; print("formats-venv: fastavro", fastavro.__version__, file=sys.stderr)'
touch "$VENV/READY"
echo "$VENV/bin/python"
