#!/usr/bin/env bash
# Installs Debian's headless Chromium for the dashboard's browser tests
# (cluster/clustertest TestDashboard*) when it is missing, with NSS's
# certutil (libnss3-tools), which TestDashboardOverHTTPS uses to make
# Chromium trust its test CA, and prints the path of Chromium's binary. The tests find it through SLUICE_CHROMIUM, which
# with-services.sh sets from this script's output.
#
#   chromium.sh            install if missing (apt-get, as root), print the binary's path
#
# Environment:
#   SLUICE_CHROMIUM   a Chromium binary to use instead (checked, not installed)
set -euo pipefail

die() { echo "chromium: $*" >&2; exit 1; }

if [[ -n "${SLUICE_CHROMIUM:-}" ]]; then
  [[ -x "$SLUICE_CHROMIUM" ]] || die "SLUICE_CHROMIUM=$SLUICE_CHROMIUM is not an executable"
  echo "$SLUICE_CHROMIUM"
  exit 0
fi

find_bin() { command -v chromium || command -v chromium-browser || true; }

bin="$(find_bin)"
if [[ -z "$bin" ]] || ! command -v certutil >/dev/null; then
  command -v apt-get >/dev/null || die "chromium is missing and there is no apt-get to install Debian's chromium package"
  [[ "$(id -u)" == 0 ]] || die "chromium is missing: install Debian's chromium package (apt-get install chromium) as root"
  echo "chromium: installing Debian's chromium package" >&2
  # Serialise concurrent installs (several checkouts on one machine).
  exec 9>/tmp/sluice-chromium-install.lock
  flock 9
  bin="$(find_bin)"
  if [[ -z "$bin" ]] || ! command -v certutil >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core libnss3-tools >&2 ||
      die "apt-get install chromium libnss3-tools failed"
    bin="$(find_bin)"
  fi
fi
[[ -n "$bin" ]] || die "chromium is still missing after apt-get install chromium"
command -v certutil >/dev/null || die "certutil is still missing after apt-get install libnss3-tools"
"$bin" --version >&2 || die "$bin --version failed"
echo "$bin"
