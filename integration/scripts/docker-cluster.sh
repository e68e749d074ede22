#!/usr/bin/env bash
# Sluice's dockerized multi-host test cluster: Hadoop 3.4 (HDFS + YARN) and a Kafka KRaft cluster,
# every node its own container and host on one user-defined Docker network.
#
#   master            NameNode + ResourceManager
#   worker1..worker3  DataNode + NodeManager each
#   kafka1..kafka3    one Kafka broker + KRaft controller each (replication 3, min.insync.replicas 2)
#
#   docker-cluster.sh images [--force]  build the images (or find them cached: see below); the node
#                                       image is also tagged sluice-cluster:latest for docker-compose
#   docker-cluster.sh start DIR         start dockerd if it is not running, build or reuse the images,
#                                       start the cluster with docker-compose (the file users start it
#                                       with: integration/docker/docker-compose.yml), wait until every
#                                       node serves, write DIR
#   docker-cluster.sh stop DIR          remove the cluster's containers and network, then stop dockerd
#                                       and restore the host's iptables if `start` started it; idempotent
#   docker-cluster.sh status DIR        exit 0 and print DIR/READY if the cluster runs, exit 1 otherwise
#   docker-cluster.sh dockerd-start     start dockerd by hand (no systemd), saving iptables first
#   docker-cluster.sh dockerd-stop      stop a dockerd started by this script and restore iptables
#
# start adds the nodes' names (master, worker1, ...) to the Docker host's /etc/hosts in a marked block,
# as DNS resolves a real cluster's hosts for a client; stop removes the block.
# DIR receives conf/ (core-site.xml, hdfs-site.xml, yarn-site.xml for clients on the Docker host:
# point HADOOP_CONF_DIR at it) and READY, key=value lines:
#   conf_dir=DIR/conf  bootstrap=IP:9092,...  network=NAME  subnet=CIDR  startup_s=N
#   node.NAME=CONTAINER IP HOSTNAME ROLE      (one line per node)
#
# Every node publishes its IP on the cluster network (the Docker host routes to it, so a client
# outside the containers reaches each daemon as a laptop reaches a real cluster); daemons bind to
# all interfaces of their container, and containers reach each other by host name too.
#
# Images are cached by content hash: sluice-debian:H (debootstrap of Debian, H = hash of its
# recipe) and sluice-cluster:H (H = hash of the base, Dockerfile, node.sh and every jar), so a warm
# machine rebuilds nothing and a changed input rebuilds only what depends on it. The jars are those
# integration/scripts/minicluster.sh and kafka.sh fetch from Maven Central (built here if missing).
#
# Environment:
#   DOCKER_CLUSTER_STATE    where dockerd's pid, log and the saved iptables go
#                           (default /tmp/sluice-docker-cluster)
#   DOCKER_CLUSTER_SUBNET   the network's /24 (default 172.30.15.0/24); nodes take .10-.23
#   DOCKER_CLUSTER_HEAP     -Xmx of each daemon's JVM (default 256m)
#   DOCKER_CLUSTER_NM_MEMORY_MB, DOCKER_CLUSTER_NM_VCORES  what each NodeManager offers (2048, 4)
#   DOCKER_CLUSTER_START_TIMEOUT  seconds to wait for the cluster (default 300)
#   DEBIAN_MIRROR           debootstrap's mirror (default http://deb.debian.org/debian)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
IMAGE_DIR="$ROOT/docker/image"
STATE=${DOCKER_CLUSTER_STATE:-/tmp/sluice-docker-cluster}
SUBNET=${DOCKER_CLUSTER_SUBNET:-172.30.15.0/24}
NET=sluice-cluster
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_REPO=sluice-debian
CLUSTER_REPO=sluice-cluster

# Nodes: name, last octet, role.
NODES=(master:10:master worker1:11:worker worker2:12:worker worker3:13:worker
  kafka1:21:kafka kafka2:22:kafka kafka3:23:kafka)

die() { echo "docker-cluster: $*" >&2; exit 1; }
log() { echo "docker-cluster: $*" >&2; }

need_root() { [[ $(id -u) == 0 ]] || die "must run as root (dockerd, debootstrap and iptables need it)"; }

prefix() {
  [[ "$SUBNET" =~ ^([0-9]+\.[0-9]+\.[0-9]+)\.0/24$ ]] || die "DOCKER_CLUSTER_SUBNET=$SUBNET is not a.b.c.0/24"
  echo "${BASH_REMATCH[1]}"
}

# --- dockerd ------------------------------------------------------------------------------------

docker_up() { docker info >/dev/null 2>&1; }

# ensure_packages installs Debian's Docker engine and debootstrap when they are missing (a fresh
# machine): apt-get as root, as the other scripts install protoc and chromium.
ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v iptables-save >/dev/null || missing+=(iptables)
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "${missing[*]} missing and there is no apt-get to install them"
  log "installing ${missing[*]} from Debian (apt-get)"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2 ||
    die "apt-get install ${missing[*]} failed"
}

# remove_stale_rules deletes the MASQUERADE rules of Docker bridges that no longer exist (a dockerd
# killed before it removed its networks leaves them). Such a rule, `-s SUBNET ! -o br-OLD`, would
# masquerade the traffic between the containers of a new bridge on the same subnet: every DataNode
# would reach the NameNode from the bridge's gateway address and they would replace each other.
remove_stale_rules() {
  local rule br
  while read -r rule; do
    br="$(grep -oE 'br-[0-9a-f]+' <<<"$rule")" || continue
    ip link show "$br" >/dev/null 2>&1 && continue
    log "removing the rule of a Docker bridge that is gone: $rule"
    # shellcheck disable=SC2086
    iptables -t nat -D ${rule#-A }
  done < <(iptables -t nat -S POSTROUTING | grep -E -- '-o br-[0-9a-f]+ -j MASQUERADE' || true)
}

cmd_dockerd_start() {
  need_root
  ensure_packages
  command -v dockerd >/dev/null || die "dockerd not found: apt-get install docker.io"
  mkdir -p "$STATE"
  exec 8>"$STATE/dockerd.lock"
  flock 8
  if docker_up; then
    exec 8>&-
    return 0
  fi
  remove_stale_rules
  # What dockerd changes on the host: its iptables rules (FORWARD policy DROP, MASQUERADE, DOCKER
  # chains) and its bridges. Saved here, put back by dockerd-stop.
  iptables-save >"$STATE/iptables.before"
  ip -o link show type bridge | awk -F': ' '{print $2}' | cut -d@ -f1 >"$STATE/bridges.before" || true
  log "starting dockerd (log: $STATE/dockerd.log)"
  # fd 8 (the lock) closed for dockerd: it would hold the lock for its whole life.
  setsid dockerd --log-level=warn </dev/null >>"$STATE/dockerd.log" 2>&1 8>&- &
  echo $! >"$STATE/dockerd.pid"
  local deadline=$((SECONDS + 60))
  until docker_up; do
    kill -0 "$(cat "$STATE/dockerd.pid")" 2>/dev/null || { tail -n 20 "$STATE/dockerd.log" >&2; die "dockerd exited"; }
    ((SECONDS < deadline)) || die "dockerd not answering after 60s (log: $STATE/dockerd.log)"
    sleep 0.3
  done
  exec 8>&-
}

cmd_dockerd_stop() {
  [[ -f "$STATE/dockerd.pid" ]] || { log "dockerd was not started by this script; leaving it"; return 0; }
  local pid
  pid="$(cat "$STATE/dockerd.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    local deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && { log "dockerd $pid still up after 60s: SIGKILL"; kill -KILL "$pid" || true; }
    log "dockerd stopped (pid $pid)"
  fi
  if [[ -f "$STATE/iptables.before" ]]; then
    iptables-restore <"$STATE/iptables.before" && log "iptables restored"
  fi
  if [[ -f "$STATE/bridges.before" ]]; then
    local b
    for b in $(ip -o link show type bridge | awk -F': ' '{print $2}' | cut -d@ -f1); do
      grep -qx "$b" "$STATE/bridges.before" || ip link delete "$b" 2>/dev/null || true
    done
  fi
  rm -f "$STATE/dockerd.pid" "$STATE/iptables.before" "$STATE/bridges.before"
}

# --- images -------------------------------------------------------------------------------------

BASE_RECIPE="debootstrap --variant=minbase $SUITE $MIRROR; docker import; v1"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

hash_of() { sha256sum | cut -c1-12; }

build_base() {
  local tag=$1 force=$2
  if [[ $force == 0 ]] && image_exists "$tag"; then return 0; fi
  command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
  local root="$STATE/rootfs"
  rm -rf "$root"
  mkdir -p "$root"
  log "debootstrap $SUITE into $root (about a minute)"
  debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 ||
    { tail -n 20 "$STATE/debootstrap.log" >&2; die "debootstrap failed (log: $STATE/debootstrap.log)"; }
  rm -rf "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | docker import -m "$BASE_RECIPE" - "$tag" >/dev/null
  rm -rf "$root"
  log "built $tag"
}

# jars: build the jar directories if they are missing (from Maven Central, through the scripts
# that own them).
jars() {
  [[ -d "$ROOT/minicluster/target/lib" && -f "$ROOT/minicluster/target/.sluice-built" ]] || "$HERE/minicluster.sh" build
  [[ -d "$ROOT/kafka/target/lib" && -f "$ROOT/kafka/target/.sluice-built" ]] || "$HERE/kafka.sh" build
}

cluster_tag() {
  local base=$1
  {
    echo "$base"
    cat "$IMAGE_DIR/Dockerfile" "$IMAGE_DIR/node.sh"
    (cd "$ROOT/minicluster/target/lib" && sha256sum -- *.jar)
    (cd "$ROOT/kafka/target/lib" && sha256sum -- *.jar)
  } | hash_of
}

cmd_images() {
  local force=0
  [[ "${1:-}" == "--force" ]] && force=1
  need_root
  cmd_dockerd_start
  mkdir -p "$STATE"
  exec 7>"$STATE/images.lock"
  flock 7
  local base="$BASE_REPO:$(echo "$BASE_RECIPE" | hash_of)"
  build_base "$base" "$force"
  jars
  local tag="$CLUSTER_REPO:$(cluster_tag "$base")"
  if [[ $force == 1 ]] || ! image_exists "$tag"; then
    local ctx="$STATE/context"
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp -l -r "$ROOT/minicluster/target/lib" "$ctx/hadoop-lib" 2>/dev/null || cp -r "$ROOT/minicluster/target/lib" "$ctx/hadoop-lib"
    cp -l -r "$ROOT/kafka/target/lib" "$ctx/kafka-lib" 2>/dev/null || cp -r "$ROOT/kafka/target/lib" "$ctx/kafka-lib"
    cp "$IMAGE_DIR/Dockerfile" "$IMAGE_DIR/node.sh" "$ctx/"
    log "building $tag"
    DOCKER_BUILDKIT=0 docker build -q --build-arg BASE="$base" -t "$tag" "$ctx" >"$STATE/build.log" 2>&1 ||
      { tail -n 30 "$STATE/build.log" >&2; die "docker build failed (log: $STATE/build.log)"; }
    rm -rf "$ctx"
    log "built $tag"
  fi
  # The name integration/docker/docker-compose.yml starts by default.
  docker tag "$tag" "$CLUSTER_REPO:latest"
  exec 7>&-
  echo "$tag"
}

# --- the cluster --------------------------------------------------------------------------------

remove_containers() {
  local ids
  ids="$(docker ps -aq --filter label=io.github.sluice.docker-cluster)
$(docker ps -aq --filter label=io.github.sluice.docker-cluster-client)"
  ids="$(echo $ids)"
  [[ -z "$ids" ]] || docker rm -f $ids >/dev/null
}

# compose runs docker-compose on integration/docker/docker-compose.yml, the file users start the
# cluster with: CI starts it the same way.
compose() {
  command -v docker-compose >/dev/null || die "docker-compose not found: apt-get install docker-compose"
  docker-compose --ansi never -p sluice-cluster -f "$ROOT/docker/docker-compose.yml" "$@"
}

kafka_cluster_id() {
  # A Kafka Uuid: 16 random bytes, URL-safe base64 without padding.
  head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22
}

wait_ready() {
  local p=$1 timeout=${DOCKER_CLUSTER_START_TIMEOUT:-300}
  local deadline=$((SECONDS + timeout)) m="$p.10" n
  local want_workers=0 want_kafka=0 spec
  for spec in "${NODES[@]}"; do
    case "${spec##*:}" in worker) want_workers=$((want_workers + 1)) ;; kafka) want_kafka=$((want_kafka + 1)) ;; esac
  done
  local dn=0 nm=0 kb=0
  while ((SECONDS < deadline)); do
    local c
    for c in $(docker ps -a --filter label=io.github.sluice.docker-cluster --filter status=exited -q); do
      docker logs --tail 40 "$c" >&2 || true
      die "container $(docker inspect -f '{{.Name}}' "$c") exited while starting"
    done
    dn="$(curl -sf "http://$m:9870/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState" |
      sed -n 's/.*"NumLiveDataNodes" *: *\([0-9]*\).*/\1/p' || true)"
    nm="$(curl -sf "http://$m:8088/ws/v1/cluster/metrics" | sed -n 's/.*"activeNodes":\([0-9]*\).*/\1/p' || true)"
    kb=0
    for spec in "${NODES[@]}"; do
      [[ "${spec##*:}" == kafka ]] || continue
      n="${spec%%:*}"
      if docker logs "sluice-$n" 2>&1 | grep -q "Kafka Server started" &&
        (exec 3<>"/dev/tcp/$p.$(cut -d: -f2 <<<"$spec")/9092") 2>/dev/null; then
        kb=$((kb + 1))
      fi
    done
    if [[ "${dn:-0}" == "$want_workers" && "${nm:-0}" == "$want_workers" && $kb == "$want_kafka" ]]; then
      # HDFS is writable once it has left safe mode.
      if curl -sf "http://$m:9870/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo" | grep -q '"Safemode" *: *""'; then
        return 0
      fi
    fi
    sleep 1
  done
  die "not ready after ${timeout}s: $dn/$want_workers DataNodes, $nm/$want_workers NodeManagers, $kb/$want_kafka brokers"
}

cmd_start() {
  [[ $# -ge 1 ]] || die "usage: $0 start DIR"
  need_root
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd)"
  local t0=$SECONDS
  cmd_dockerd_start
  local image
  image="$(cmd_images)"
  rm -f "$dir/READY"
  remove_containers
  # docker-compose makes the network with its own labels; one left by an older start is replaced.
  docker network rm "$NET" >/dev/null 2>&1 || true
  local p
  p="$(prefix)"
  mkdir -p "$dir/conf"
  log "docker-compose up (integration/docker/docker-compose.yml, image $image)"
  SLUICE_CLUSTER_IMAGE="$image" SLUICE_CLUSTER_DIR="$dir" SLUICE_SUBNET_PREFIX="$p" \
    SLUICE_KAFKA_CLUSTER_ID="$(kafka_cluster_id)" SLUICE_HEAP="${DOCKER_CLUSTER_HEAP:-256m}" \
    SLUICE_NM_MEMORY_MB="${DOCKER_CLUSTER_NM_MEMORY_MB:-2048}" SLUICE_NM_VCORES="${DOCKER_CLUSTER_NM_VCORES:-4}" \
    SLUICE_OWNER="$(id -u):$(id -g)" compose up -d --no-build >"$STATE/compose.log" 2>&1 ||
    { tail -n 30 "$STATE/compose.log" >&2; die "docker-compose up failed (log: $STATE/compose.log)"; }
  local rc
  rc="$(docker wait sluice-client-conf)"
  [[ $rc == 0 && -f "$dir/conf/yarn-site.xml" && -f "$dir/bootstrap" ]] ||
    { docker logs sluice-client-conf >&2 || true; die "the client-conf service failed (exit $rc)"; }
  local conf="$dir/conf" spec
  write_hosts "$p"
  wait_ready "$p"
  local bootstrap=""
  {
    echo "conf_dir=$conf"
    echo "network=$NET"
    echo "subnet=$SUBNET"
    echo "image=$image"
    for spec in "${NODES[@]}"; do
      local name=${spec%%:*} octet role=${spec##*:}
      octet="$(cut -d: -f2 <<<"$spec")"
      echo "node.$name=sluice-$name $p.$octet $name $role"
      [[ $role == kafka ]] && bootstrap+="${bootstrap:+,}$p.$octet:9092"
    done
    echo "bootstrap=$bootstrap"
    echo "startup_s=$((SECONDS - t0))"
  } >"$dir/READY.tmp"
  mv "$dir/READY.tmp" "$dir/READY"
  log "READY in $((SECONDS - t0))s ($dir/READY)"
  echo "$dir"
}

# The Docker host resolves the nodes' names as a user's machine resolves a real cluster's through
# DNS: the ApplicationMaster publishes its NodeManager's host name (as Flink's does), and a client
# outside the containers must reach it by that name. A marked block in /etc/hosts, written in place
# (it may be a bind mount) and removed by stop.
HOSTS_BEGIN="# BEGIN sluice docker cluster"
HOSTS_END="# END sluice docker cluster"

hosts_without_block() { awk -v b="$HOSTS_BEGIN" -v e="$HOSTS_END" 'index($0, b) == 1 {skip = 1} !skip {print} index($0, e) == 1 {skip = 0}' /etc/hosts; }

remove_hosts() {
  grep -q "^$HOSTS_BEGIN" /etc/hosts 2>/dev/null || return 0
  local kept
  kept="$(hosts_without_block)"
  printf '%s\n' "$kept" >/etc/hosts
}

write_hosts() {
  local p=$1 kept spec name octet
  kept="$(hosts_without_block)"
  {
    printf '%s\n' "$kept"
    echo "$HOSTS_BEGIN (integration/scripts/docker-cluster.sh; removed by its stop)"
    for spec in "${NODES[@]}"; do
      name=${spec%%:*}
      octet="$(cut -d: -f2 <<<"$spec")"
      echo "$p.$octet $name sluice-$name"
    done
    echo "$HOSTS_END"
  } >/etc/hosts.sluice.tmp
  cat /etc/hosts.sluice.tmp >/etc/hosts
  rm -f /etc/hosts.sluice.tmp
}

cmd_stop() {
  [[ $# -ge 1 ]] || die "usage: $0 stop DIR"
  if docker_up; then
    remove_containers
    docker network rm "$NET" >/dev/null 2>&1 || true
  fi
  [[ -d "$1" ]] && rm -f "$1/READY"
  remove_hosts
  cmd_dockerd_stop
}

cmd_status() {
  [[ $# -ge 1 ]] || die "usage: $0 status DIR"
  [[ -f "$1/READY" ]] && docker_up || { log "not running in $1"; return 1; }
  local n
  n="$(docker ps -q --filter label=io.github.sluice.docker-cluster --filter status=running | wc -l)"
  [[ $n == "${#NODES[@]}" ]] || { log "$n of ${#NODES[@]} containers running"; return 1; }
  cat "$1/READY"
}

case "${1:-}" in
  images) shift; cmd_images "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  dockerd-start) shift; cmd_dockerd_start ;;
  dockerd-stop) shift; cmd_dockerd_stop ;;
  *)
    sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
