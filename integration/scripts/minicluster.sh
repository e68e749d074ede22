#!/usr/bin/env bash
# Sluice Hadoop test harness: a MiniDFSCluster + MiniYARNCluster in one JVM.
#
#   minicluster.sh build [--force]        fetch dependencies (Maven Central, first time) and build
#   minicluster.sh start CONFDIR [OPTS]   start in the background, wait for CONFDIR/READY, print CONFDIR
#   minicluster.sh stop CONFDIR           stop it (SIGTERM, then SIGKILL after a deadline); idempotent
#   minicluster.sh status CONFDIR         exit 0 and print READY if running, exit 1 otherwise
#   minicluster.sh run CONFDIR [OPTS]     run in the foreground (exec java); used by the Go package
#   minicluster.sh hadoop CONFDIR CLASS [ARGS]  run one of Hadoop's own command-line classes (e.g.
#                                         org.apache.hadoop.yarn.client.cli.LogsCLI, what `yarn logs`
#                                         runs) against the cluster of CONFDIR, as Hadoop's scripts do
#
# OPTS are passed to the JVM's main class: --nodemanagers N, --nm-memory-mb MB, --nm-vcores N,
# --min-allocation-mb MB, --exit-on-stdin-eof.
#
# CONFDIR receives core-site.xml, hdfs-site.xml, yarn-site.xml and READY (key=value lines).
# Cluster state, the JVM log and the pid file live in CONFDIR/.harness/ (deleted on start).
#
# Environment:
#   JAVA_HOME                 JDK to use (default: the one `java` on PATH belongs to)
#   MINICLUSTER_JAVA_OPTS     JVM options (default: -Xmx1g -XX:+UseSerialGC)
#   MINICLUSTER_START_TIMEOUT seconds to wait for READY (default 240)
#   MINICLUSTER_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default 90)
#   MVN_FLAGS                 extra Maven flags for build, e.g. -o to stay offline
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
MC_DIR="$ROOT/minicluster"
DS_DIR="$ROOT/distshell"
MAIN_CLASS=io.github.sluice.minicluster.Main

die() { echo "minicluster: $*" >&2; exit 1; }

# Java 17 closes JDK internals that Hadoop 3.4 (Guice, Kerberos, NIO) reaches into.
ADD_OPENS=(
  --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/java.util.regex=ALL-UNNAMED
  --add-opens=java.base/java.security=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/sun.net.dns=ALL-UNNAMED
  --add-opens=java.base/sun.net.util=ALL-UNNAMED
  --add-opens=java.base/sun.security.x509=ALL-UNNAMED
  --add-opens=java.base/sun.security.util=ALL-UNNAMED
  --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports=java.base/sun.net.dns=ALL-UNNAMED
  --add-exports=java.base/sun.net.util=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
)

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

# built_stamp DIR: path of the stamp written after a successful build of the Maven project DIR.
stamp_of() { echo "$1/target/.sluice-built"; }

# up_to_date DIR: the stamp exists and is newer than the pom and every source file.
up_to_date() {
  local stamp
  stamp="$(stamp_of "$1")"
  [[ -f "$stamp" ]] || return 1
  [[ -z "$(find "$1/pom.xml" "$1/src" -newer "$stamp" -print -quit 2>/dev/null)" ]]
}

mvn_package() {
  local dir=$1
  local log="$dir/target/build.log"
  echo "minicluster: building $dir" >&2
  mkdir -p "$dir/target"
  # shellcheck disable=SC2086
  if ! mvn -B -q ${MVN_FLAGS:-} -f "$dir/pom.xml" package >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "maven build of $dir failed (full log: $log)"
  fi
  touch "$(stamp_of "$dir")"
}

cmd_build() {
  local force=0
  [[ "${1:-}" == "--force" ]] && force=1
  find_java
  command -v mvn >/dev/null || die "mvn not found: install Maven 3 (apt-get install maven)"
  # Test binaries of several packages may build at once: one builds, the others wait for it.
  mkdir -p "$MC_DIR/target"
  exec 9>"$MC_DIR/target/.build.lock"
  flock 9
  local dir
  for dir in "$MC_DIR" "$DS_DIR"; do
    if [[ $force == 1 ]] || ! up_to_date "$dir"; then
      mvn_package "$dir"
    fi
  done
  exec 9>&-
}

classpath() {
  local jar="$MC_DIR/target/sluice-minicluster-0.1.0.jar"
  [[ -f "$jar" && -d "$MC_DIR/target/lib" ]] || die "not built: run $0 build"
  echo "$jar:$MC_DIR/target/lib/*"
}

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd); }

cmd_run() {
  [[ $# -ge 1 ]] || die "usage: $0 run CONFDIR [OPTS]"
  local conf
  conf="$(abs_dir "$1")"
  shift
  find_java
  local cp
  cp="$(classpath)"
  local work="$conf/.harness/work"
  mkdir -p "$work" "$conf/.harness/tmp"
  # Containers inherit HADOOP_CONF_DIR and JAVA_HOME (NodeManager env whitelist), as on a real node.
  export HADOOP_CONF_DIR="$conf"
  echo "$$" >"$conf/.harness/pid" # exec keeps this pid: it is the JVM's
  cd "$work"
  # shellcheck disable=SC2086
  exec "$JAVA" ${MINICLUSTER_JAVA_OPTS:--Xmx1g -XX:+UseSerialGC} \
    -Djava.net.preferIPv4Stack=true -Djava.io.tmpdir="$conf/.harness/tmp" "${ADD_OPENS[@]}" \
    -cp "$cp" "$MAIN_CLASS" --conf-dir "$conf" --work-dir "$work" "$@"
}

# cmd_hadoop CONFDIR CLASS [ARGS]: Hadoop's scripts put HADOOP_CONF_DIR first on the class path,
# where Configuration finds the *-site.xml files.
cmd_hadoop() {
  [[ $# -ge 2 ]] || die "usage: $0 hadoop CONFDIR CLASS [ARGS]"
  local conf
  conf="$(abs_dir "$1")"
  shift
  find_java
  local cp
  cp="$(classpath)"
  export HADOOP_CONF_DIR="$conf"
  exec "$JAVA" -Xmx256m -Djava.net.preferIPv4Stack=true -Dhadoop.root.logger=WARN,console "${ADD_OPENS[@]}" -cp "$conf:$cp" "$@"
}

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

read_pid() {
  local f="$1/.harness/pid"
  [[ -f "$f" ]] && cat "$f" || true
}

cmd_start() {
  [[ $# -ge 1 ]] || die "usage: $0 start CONFDIR [OPTS]"
  local conf
  conf="$(abs_dir "$1")"
  shift
  local pid
  pid="$(read_pid "$conf")"
  if pid_alive "$pid" && [[ -f "$conf/READY" ]]; then
    echo "minicluster: already running (pid $pid)" >&2
    echo "$conf"
    return 0
  fi
  if pid_alive "$pid"; then
    die "a minicluster (pid $pid) owns $conf but is not READY; run: $0 stop $conf"
  fi
  cmd_build
  rm -rf "$conf/.harness" "$conf/READY"
  mkdir -p "$conf/.harness"
  local log="$conf/.harness/minicluster.log"
  # setsid: own process group, so stop can signal the JVM and whatever it forked together.
  setsid "$0" run "$conf" "$@" </dev/null >"$log" 2>&1 &
  pid=$!
  echo "$pid" >"$conf/.harness/pid"
  local timeout=${MINICLUSTER_START_TIMEOUT:-240}
  local deadline=$((SECONDS + timeout))
  while [[ ! -f "$conf/READY" ]]; do
    pid="$(read_pid "$conf")"
    if ! pid_alive "$pid"; then
      echo "minicluster: JVM exited before READY; last lines of $log:" >&2
      tail -n 40 "$log" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "minicluster: not READY after ${timeout}s; last lines of $log:" >&2
      tail -n 40 "$log" >&2
      cmd_stop "$conf" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  pid="$(read_pid "$conf")"
  echo "minicluster: READY (pid $pid, $(grep '^startup_ms=' "$conf/READY" | cut -d= -f2) ms)" >&2
  echo "$conf"
}

# kill_containers WORKDIR: SIGKILL processes whose working directory lies under WORKDIR: YARN
# containers that the NodeManagers started in their own sessions and that outlived the JVM.
kill_containers() {
  local work=$1 p cwd
  [[ -d "$work" ]] || return 0
  for p in /proc/[0-9]*; do
    cwd="$(readlink "$p/cwd" 2>/dev/null || true)"
    if [[ "$cwd" == "$work"/* ]]; then
      echo "minicluster: killing leftover container process ${p#/proc/} ($cwd)" >&2
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
}

cmd_stop() {
  [[ $# -ge 1 ]] || die "usage: $0 stop CONFDIR"
  [[ -d "$1" ]] || { echo "minicluster: $1 does not exist; nothing to stop" >&2; return 0; }
  local conf
  conf="$(cd "$1" && pwd)"
  local pid
  pid="$(read_pid "$conf")"
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local timeout=${MINICLUSTER_STOP_TIMEOUT:-90}
    local deadline=$((SECONDS + timeout))
    while pid_alive "$pid" && ((SECONDS < deadline)); do
      sleep 0.2
    done
    if pid_alive "$pid"; then
      echo "minicluster: pid $pid still alive after ${timeout}s; sending SIGKILL" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "minicluster: stopped (pid $pid)" >&2
  else
    echo "minicluster: not running in $conf" >&2
  fi
  kill_containers "$conf/.harness/work"
  rm -f "$conf/.harness/pid" "$conf/READY"
}

cmd_status() {
  [[ $# -ge 1 ]] || die "usage: $0 status CONFDIR"
  local pid
  pid="$(read_pid "$1")"
  if pid_alive "$pid" && [[ -f "$1/READY" ]]; then
    cat "$1/READY"
    return 0
  fi
  echo "minicluster: not running in $1" >&2
  return 1
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  run) shift; cmd_run "$@" ;;
  hadoop) shift; cmd_hadoop "$@" ;;
  *)
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
