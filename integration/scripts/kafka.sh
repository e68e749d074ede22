#!/usr/bin/env bash
# Sluice Kafka test broker: one Apache Kafka process in KRaft mode (combined broker + controller,
# node id 1) on loopback.
#
#   kafka.sh build [--force]         fetch Kafka's jars (Maven Central, first time) into kafka/target/lib
#   kafka.sh start DIR [OPTS]        start in the background, wait for DIR/READY, print the bootstrap address
#   kafka.sh stop DIR                stop it (SIGTERM, then SIGKILL after a deadline); idempotent
#   kafka.sh status DIR              exit 0 and print READY if running, exit 1 otherwise
#   kafka.sh run DIR [OPTS]          run in the foreground; used by the Go package kafkabroker
#
# OPTS: --port P (client listener, default 19092), --controller-port P (default 19093),
#       --exit-on-stdin-eof (stop when standard input closes),
#       --gssapi-port P --krb5-conf FILE --keytab FILE --principal kafka/HOST@REALM: a second client
#       listener, SASL_PLAINTEXT with GSSAPI (Kerberos), whose broker principal is logged in from
#       the keytab against the KDC of krb5.conf (all four together; e.g. the secure minicluster's).
#
# DIR receives server.properties, the log dir (DIR/data, formatted on first run), the broker log
# (DIR/broker.log) and, once the broker has started, READY with key=value lines:
#   bootstrap=localhost:P  controller=localhost:P  cluster_id=...  kafka_version=...  pid=...
#   and, with a GSSAPI listener, gssapi_bootstrap=localhost:P  gssapi_principal=...
#
# Environment:
#   JAVA_HOME                JDK to use (default: the one `java` on PATH belongs to)
#   KAFKA_JAVA_OPTS          JVM options (default: -Xmx512m -XX:+UseSerialGC)
#   KAFKA_START_TIMEOUT      seconds to wait for READY (default 180)
#   KAFKA_STOP_TIMEOUT       seconds to wait after SIGTERM before SIGKILL (default 60)
#   MVN_FLAGS                extra Maven flags for build, e.g. -o to stay offline
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_DIR="$(cd "$HERE/../kafka" && pwd)"

die() { echo "kafka: $*" >&2; exit 1; }

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

cmd_build() {
  local force=0
  [[ "${1:-}" == "--force" ]] && force=1
  find_java
  command -v mvn >/dev/null || die "mvn not found: install Maven 3 (apt-get install maven)"
  mkdir -p "$KAFKA_DIR/target"
  exec 9>"$KAFKA_DIR/target/.build.lock"
  flock 9
  local stamp="$KAFKA_DIR/target/.sluice-built"
  if [[ $force == 1 || ! -f "$stamp" || "$KAFKA_DIR/pom.xml" -nt "$stamp" ]]; then
    echo "kafka: building $KAFKA_DIR" >&2
    local log="$KAFKA_DIR/target/build.log"
    # shellcheck disable=SC2086
    if ! mvn -B -q ${MVN_FLAGS:-} -f "$KAFKA_DIR/pom.xml" package >"$log" 2>&1; then
      tail -n 60 "$log" >&2
      die "maven build of $KAFKA_DIR failed (full log: $log)"
    fi
    touch "$stamp"
  fi
  exec 9>&-
}

classpath() {
  [[ -d "$KAFKA_DIR/target/lib" ]] || die "not built: run $0 build"
  echo "$KAFKA_DIR/target/lib/*"
}

kafka_version() {
  local j
  j="$(ls "$KAFKA_DIR"/target/lib/kafka-clients-*.jar 2>/dev/null | head -n 1)"
  j="${j##*/kafka-clients-}"
  echo "${j%.jar}"
}

port_ok() { [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 65535)); }

# write_properties DIR PORT CONTROLLER_PORT [GSSAPI_PORT KEYTAB PRINCIPAL]
write_properties() {
  local dir=$1 port=$2 cport=$3 gport=${4:-} keytab=${5:-} principal=${6:-}
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
  local advertised="PLAINTEXT://localhost:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  local sasl=""
  if [[ -n "$gport" ]]; then
    listeners+=",SASL_PLAINTEXT://127.0.0.1:$gport"
    # Clients ask for a ticket to kafka/<advertised host>: the principal's host part.
    advertised+=",SASL_PLAINTEXT://localhost:$gport"
    protocols+=",SASL_PLAINTEXT:SASL_PLAINTEXT"
    sasl="sasl.enabled.mechanisms=GSSAPI
sasl.kerberos.service.name=${principal%%/*}
listener.name.sasl_plaintext.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab=\"$keytab\" principal=\"$principal\";"
  fi
  cat >"$dir/server.properties.tmp" <<EOF
# Written by integration/scripts/kafka.sh: single-node KRaft broker for tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
$sasl
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.flush.interval.messages=9223372036854775807
EOF
  mv "$dir/server.properties.tmp" "$dir/server.properties"
}

cmd_run() {
  [[ $# -ge 1 ]] || die "usage: $0 run DIR [--port P] [--controller-port P] [--exit-on-stdin-eof]"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd)"
  shift
  local port=19092 cport=19093 stdin_eof=0 gport="" krb5="" keytab="" principal=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --port) port=$2; shift 2 ;;
      --controller-port) cport=$2; shift 2 ;;
      --gssapi-port) gport=$2; shift 2 ;;
      --krb5-conf) krb5=$2; shift 2 ;;
      --keytab) keytab=$2; shift 2 ;;
      --principal) principal=$2; shift 2 ;;
      --exit-on-stdin-eof) stdin_eof=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  port_ok "$port" || die "--port $port is not a port number"
  port_ok "$cport" || die "--controller-port $cport is not a port number"
  [[ "$port" != "$cport" ]] || die "--port and --controller-port are both $port"
  local krb_opts=()
  if [[ -n "$gport$krb5$keytab$principal" ]]; then
    [[ -n "$gport" && -n "$krb5" && -n "$keytab" && -n "$principal" ]] ||
      die "--gssapi-port, --krb5-conf, --keytab and --principal go together"
    port_ok "$gport" || die "--gssapi-port $gport is not a port number"
    [[ "$gport" != "$port" && "$gport" != "$cport" ]] || die "--gssapi-port $gport is already taken by another listener"
    [[ -r "$krb5" ]] || die "--krb5-conf $krb5 is not a readable file"
    [[ -r "$keytab" ]] || die "--keytab $keytab is not a readable file"
    [[ "$principal" =~ ^[^/@]+/[^/@]+@[^/@]+$ ]] || die "--principal $principal is not service/host@REALM"
    krb_opts=("-Djava.security.krb5.conf=$krb5")
  fi
  find_java
  local cp
  cp="$(classpath)"
  rm -f "$dir/READY"
  write_properties "$dir" "$port" "$cport" "$gport" "$keytab" "$principal"

  # shellcheck disable=SC2086
  local jvm=(${KAFKA_JAVA_OPTS:--Xmx512m -XX:+UseSerialGC} -Djava.net.preferIPv4Stack=true
    "${krb_opts[@]}" "-Dlog4j2.configurationFile=$KAFKA_DIR/log4j2.properties" -cp "$cp")
  if [[ ! -f "$dir/data/meta.properties" ]]; then
    local id
    # The tool logs to stdout too; the id is its last line.
    id="$("$JAVA" "${jvm[@]}" kafka.tools.StorageTool random-uuid | tail -n 1)"
    [[ "$id" =~ ^[A-Za-z0-9_-]{22}$ ]] || die "kafka.tools.StorageTool random-uuid gave '$id', not a cluster id"
    "$JAVA" "${jvm[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
      { cat "$dir/format.log" >&2; die "formatting $dir/data failed"; }
  fi
  local cluster_id
  cluster_id="$(sed -n 's/^cluster.id=//p' "$dir/data/meta.properties")"

  "$JAVA" "${jvm[@]}" kafka.Kafka "$dir/server.properties" >>"$dir/broker.log" 2>&1 &
  local jpid=$!
  echo "$jpid" >"$dir/pid"
  trap 'kill -TERM $jpid 2>/dev/null || true' TERM INT HUP
  if [[ $stdin_eof == 1 ]]; then
    # A background job's stdin would be /dev/null: hand it ours explicitly, through fd 3.
    exec 3<&0
    (
      cat <&3 >/dev/null || true
      kill -TERM "$jpid" 2>/dev/null || true
    ) &
    exec 3<&-
  fi
  # READY once the broker says it started and its client port accepts connections.
  (
    while kill -0 "$jpid" 2>/dev/null; do
      if grep -q "Kafka Server started" "$dir/broker.log" 2>/dev/null &&
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
        { [[ -z "$gport" ]] || (exec 3<>"/dev/tcp/127.0.0.1/$gport") 2>/dev/null; }; then
        printf 'bootstrap=localhost:%s\ncontroller=localhost:%s\ncluster_id=%s\nkafka_version=%s\npid=%s\nlog_dir=%s\n' \
          "$port" "$cport" "$cluster_id" "$(kafka_version)" "$jpid" "$dir/data" >"$dir/READY.tmp"
        if [[ -n "$gport" ]]; then
          printf 'gssapi_bootstrap=localhost:%s\ngssapi_principal=%s\n' "$gport" "$principal" >>"$dir/READY.tmp"
        fi
        mv "$dir/READY.tmp" "$dir/READY"
        exit 0
      fi
      sleep 0.2
    done
  ) &
  local rc=0
  while kill -0 "$jpid" 2>/dev/null; do
    wait "$jpid" && rc=0 || rc=$?
  done
  rm -f "$dir/READY"
  # 143 = 128 + SIGTERM: the JVM's status after a shutdown on SIGTERM, which is how it is stopped.
  [[ $rc == 143 ]] && rc=0
  echo "kafka: broker pid $jpid exited ($rc)"
  return "$rc"
}

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

read_pid() { [[ -f "$1/pid" ]] && cat "$1/pid" || true; }

cmd_start() {
  [[ $# -ge 1 ]] || die "usage: $0 start DIR [--port P] [--controller-port P]"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd)"
  shift
  local pid
  pid="$(read_pid "$dir")"
  if pid_alive "$pid" && [[ -f "$dir/READY" ]]; then
    echo "kafka: already running (pid $pid)" >&2
    sed -n 's/^bootstrap=//p' "$dir/READY"
    return 0
  fi
  pid_alive "$pid" && die "a broker (pid $pid) owns $dir but is not READY; run: $0 stop $dir"
  cmd_build
  rm -f "$dir/READY" "$dir/pid"
  setsid "$0" run "$dir" "$@" </dev/null >>"$dir/run.log" 2>&1 &
  local timeout=${KAFKA_START_TIMEOUT:-180}
  local deadline=$((SECONDS + timeout)) wrapper=$!
  while [[ ! -f "$dir/READY" ]]; do
    if ! pid_alive "$wrapper"; then
      echo "kafka: broker exited before READY; last lines of $dir/run.log and $dir/broker.log:" >&2
      tail -n 20 "$dir/run.log" >&2 || true
      tail -n 40 "$dir/broker.log" >&2 || true
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "kafka: not READY after ${timeout}s; last lines of $dir/broker.log:" >&2
      tail -n 40 "$dir/broker.log" >&2 || true
      cmd_stop "$dir" >&2 || true
      exit 1
    fi
    sleep 0.3
  done
  echo "kafka: READY (pid $(read_pid "$dir"))" >&2
  sed -n 's/^bootstrap=//p' "$dir/READY"
}

cmd_stop() {
  [[ $# -ge 1 ]] || die "usage: $0 stop DIR"
  [[ -d "$1" ]] || { echo "kafka: $1 does not exist; nothing to stop" >&2; return 0; }
  local dir pid
  dir="$(cd "$1" && pwd)"
  pid="$(read_pid "$dir")"
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local timeout=${KAFKA_STOP_TIMEOUT:-60}
    local deadline=$((SECONDS + timeout))
    while pid_alive "$pid" && ((SECONDS < deadline)); do
      sleep 0.2
    done
    if pid_alive "$pid"; then
      echo "kafka: pid $pid still alive after ${timeout}s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "kafka: stopped (pid $pid)" >&2
  else
    echo "kafka: not running in $dir" >&2
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
  echo "kafka: not running in $1" >&2
  return 1
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  run) shift; cmd_run "$@" ;;
  *)
    sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
