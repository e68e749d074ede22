#!/usr/bin/env bash
# Sluice schema registry for tests: Apicurio Registry (Confluent-compatible API at
# /apis/ccompat/v7), in memory, on loopback.
#
#   registry.sh build [--force]       build the runnable registry (Maven Central, first time) into registry/target
#   registry.sh start DIR [OPTS]      start in the background, wait for DIR/READY, print the Confluent API URL
#   registry.sh stop DIR              stop it (SIGTERM, then SIGKILL after a deadline); idempotent
#   registry.sh status DIR            exit 0 and print READY if running, exit 1 otherwise
#   registry.sh run DIR [OPTS]        run in the foreground; used by the Go package formats/internal/registryserver
#
# OPTS: --port P (default 18081), --exit-on-stdin-eof (stop when standard input closes).
#
# DIR receives registry.log, pid and, once the registry answers, READY with key=value lines:
#   url=http://127.0.0.1:P/apis/ccompat/v7  port=P  pid=...  apicurio_version=...
#
# Environment:
#   JAVA_HOME                JDK to use (default: the one `java` on PATH belongs to)
#   REGISTRY_JAVA_OPTS       JVM options (default: -Xmx384m -XX:+UseSerialGC)
#   REGISTRY_START_TIMEOUT   seconds to wait for READY (default 180)
#   REGISTRY_STOP_TIMEOUT    seconds to wait after SIGTERM before SIGKILL (default 30)
#   MVN_FLAGS                extra Maven flags for build, e.g. -o to stay offline
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REG_DIR="$(cd "$HERE/../registry" && pwd)"
VERSION=2.4.2.Final

die() { echo "registry: $*" >&2; exit 1; }

find_java() {
  if [[ -z "${JAVA_HOME:-}" ]]; then
    local j
    j="$(command -v java || true)"
    [[ -n "$j" ]] || die "java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
    JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$j")")")"
  fi
  [[ -x "$JAVA_HOME/bin/java" ]] || die "JAVA_HOME=$JAVA_HOME has no bin/java"
  export JAVA_HOME
  JAVA="$JAVA_HOME/bin/java"
}

runner() { echo "$REG_DIR/target/sluice-schema-registry-$VERSION-runner.jar"; }

cmd_build() {
  local force=0
  [[ "${1:-}" == "--force" ]] && force=1
  find_java
  command -v mvn >/dev/null || die "mvn not found: install Maven 3 (apt-get install maven)"
  mkdir -p "$REG_DIR/target"
  exec 9>"$REG_DIR/target/.build.lock"
  flock 9
  local stamp="$REG_DIR/target/.sluice-built"
  if [[ $force == 1 || ! -f "$stamp" || ! -f "$(runner)" || "$REG_DIR/pom.xml" -nt "$stamp" || "$REG_DIR/sluice.properties" -nt "$stamp" ]]; then
    echo "registry: building $REG_DIR (first run: a few minutes)" >&2
    local log="$REG_DIR/target/build.log"
    # The profile external_repos of Apicurio's parent names repositories outside Maven Central;
    # checkstyle, license and enforcer checks are Apicurio's own and need its source tree.
    local flags=(-B -q -P '!external_repos' -DskipTests -Dcheckstyle.skip -Dlicense.skip -Denforcer.skip
      -Dmaven.javadoc.skip -Dmaven.source.skip)
    # shellcheck disable=SC2086
    if ! mvn "${flags[@]}" ${MVN_FLAGS:-} -f "$REG_DIR/pom.xml" dependency:copy \
      -Dartifact="io.apicurio:apicurio-registry-app:$VERSION" -DoutputDirectory="$REG_DIR/target/app" >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      die "fetching apicurio-registry-app $VERSION failed (full log: $log)"
    fi
    mkdir -p "$REG_DIR/target/generated-resources"
    { unzip -p "$REG_DIR/target/app/apicurio-registry-app-$VERSION.jar" application.properties; echo; cat "$REG_DIR/sluice.properties"; } \
      >"$REG_DIR/target/generated-resources/application.properties"
    # shellcheck disable=SC2086
    if ! mvn "${flags[@]}" ${MVN_FLAGS:-} -f "$REG_DIR/pom.xml" package >>"$log" 2>&1; then
      tail -n 60 "$log" >&2
      die "maven build of $REG_DIR failed (full log: $log)"
    fi
    [[ -f "$(runner)" ]] || die "the build wrote no $(runner)"
    touch "$stamp"
  fi
  exec 9>&-
}

port_ok() { [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 65535)); }

# http_ok PORT PATH: the registry answers PATH with 200.
http_ok() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  IFS= read -r -t 5 line <&3 || { exec 3<&-; return 1; }
  exec 3<&-
  [[ "$line" == *" 200 "* ]]
}

cmd_run() {
  [[ $# -ge 1 ]] || die "usage: $0 run DIR [--port P] [--exit-on-stdin-eof]"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd)"
  shift
  local port=18081 stdin_eof=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --port) port=$2; shift 2 ;;
      --exit-on-stdin-eof) stdin_eof=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  port_ok "$port" || die "--port $port is not a port number"
  find_java
  [[ -f "$(runner)" ]] || die "not built: run $0 build"
  rm -f "$dir/READY"
  # shellcheck disable=SC2086
  "$JAVA" ${REGISTRY_JAVA_OPTS:--Xmx384m -XX:+UseSerialGC} -Djava.net.preferIPv4Stack=true \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dregistry.auth.enabled=false -Dquarkus.log.level=WARN \
    -jar "$(runner)" >>"$dir/registry.log" 2>&1 &
  local jpid=$!
  echo "$jpid" >"$dir/pid"
  trap 'kill -TERM $jpid 2>/dev/null || true' TERM INT HUP
  if [[ $stdin_eof == 1 ]]; then
    exec 3<&0
    (
      cat <&3 >/dev/null || true
      kill -TERM "$jpid" 2>/dev/null || true
    ) &
    exec 3<&-
  fi
  (
    while kill -0 "$jpid" 2>/dev/null; do
      if http_ok "$port" /apis/ccompat/v7/subjects 2>/dev/null; then
        printf 'url=http://127.0.0.1:%s/apis/ccompat/v7\nport=%s\npid=%s\napicurio_version=%s\n' \
          "$port" "$port" "$jpid" "$VERSION" >"$dir/READY.tmp"
        mv "$dir/READY.tmp" "$dir/READY"
        exit 0
      fi
      sleep 0.3
    done
  ) &
  local rc=0
  while kill -0 "$jpid" 2>/dev/null; do
    wait "$jpid" && rc=0 || rc=$?
  done
  rm -f "$dir/READY"
  [[ $rc == 143 ]] && rc=0
  echo "registry: pid $jpid exited ($rc)"
  return "$rc"
}

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

read_pid() { [[ -f "$1/pid" ]] && cat "$1/pid" || true; }

cmd_start() {
  [[ $# -ge 1 ]] || die "usage: $0 start DIR [--port P]"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd)"
  shift
  local pid
  pid="$(read_pid "$dir")"
  if pid_alive "$pid" && [[ -f "$dir/READY" ]]; then
    echo "registry: already running (pid $pid)" >&2
    sed -n 's/^url=//p' "$dir/READY"
    return 0
  fi
  pid_alive "$pid" && die "a registry (pid $pid) owns $dir but is not READY; run: $0 stop $dir"
  cmd_build
  rm -f "$dir/READY" "$dir/pid"
  setsid "$0" run "$dir" "$@" </dev/null >>"$dir/run.log" 2>&1 &
  local timeout=${REGISTRY_START_TIMEOUT:-180}
  local deadline=$((SECONDS + timeout)) wrapper=$!
  while [[ ! -f "$dir/READY" ]]; do
    if ! pid_alive "$wrapper"; then
      echo "registry: exited before READY; last lines of $dir/registry.log:" >&2
      tail -n 40 "$dir/registry.log" >&2 || true
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "registry: not READY after ${timeout}s; last lines of $dir/registry.log:" >&2
      tail -n 40 "$dir/registry.log" >&2 || true
      cmd_stop "$dir" >&2 || true
      exit 1
    fi
    sleep 0.3
  done
  echo "registry: READY (pid $(read_pid "$dir"))" >&2
  sed -n 's/^url=//p' "$dir/READY"
}

cmd_stop() {
  [[ $# -ge 1 ]] || die "usage: $0 stop DIR"
  [[ -d "$1" ]] || { echo "registry: $1 does not exist; nothing to stop" >&2; return 0; }
  local dir pid
  dir="$(cd "$1" && pwd)"
  pid="$(read_pid "$dir")"
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local timeout=${REGISTRY_STOP_TIMEOUT:-30}
    local deadline=$((SECONDS + timeout))
    while pid_alive "$pid" && ((SECONDS < deadline)); do
      sleep 0.2
    done
    if pid_alive "$pid"; then
      echo "registry: pid $pid still alive after ${timeout}s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "registry: stopped (pid $pid)" >&2
  else
    echo "registry: not running in $dir" >&2
  fi
  rm -f "$dir/pid" "$dir/READY"
}

cmd_status() {
  [[ $# -ge 1 ]] || die "usage: $0 status DIR"
  local pid
  pid="$(read_pid "$1")"
  if pid_alive "$pid" && [[ -f "$1/READY" ]]; then
    cat "$1/READY"
    return 0
  fi
  echo "registry: not running in $1" >&2
  return 1
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  run) shift; cmd_run "$@" ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
