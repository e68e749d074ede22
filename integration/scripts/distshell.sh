#!/usr/bin/env bash
# Runs Hadoop's DistributedShell (the plain-YARN baseline for Sluice benchmarks) against a running
# cluster and reports how long it took.
#
#   distshell.sh CONFDIR [-n CONTAINERS] [-m CONTAINER_MB] [-M AM_MB] [-t TIMEOUT_S] [--] CMD [ARGS...]
#
# CONFDIR holds the cluster's core-site.xml and yarn-site.xml (a harness conf dir, or any Hadoop
# client conf dir). Defaults: 2 containers of 128 MB, a 256 MB ApplicationMaster, 300 s timeout,
# command `echo distshell-ok`.
#
# Prints on stdout, last line:  distshell: app=<id> containers=N status=SUCCEEDED elapsed_ms=T
# Exit status: 0 if the application succeeded, 1 otherwise (the client's log goes to stderr).
#
# The ApplicationMaster's classpath comes from the client's (yarn.is.minicluster=true in the
# harness's yarn-site.xml makes the client append its own classpath to the AM's); against an
# external cluster, the cluster's yarn.application.classpath must carry Hadoop's jars.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DS_DIR="$(cd "$HERE/../distshell" && pwd)"
die() { echo "distshell: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: $0 CONFDIR [-n CONTAINERS] [-m CONTAINER_MB] [-M AM_MB] [-t TIMEOUT_S] [--] CMD [ARGS...]"
CONF="$(cd "$1" 2>/dev/null && pwd)" || die "conf dir $1 does not exist"
shift
[[ -f "$CONF/yarn-site.xml" ]] || die "$CONF has no yarn-site.xml"

n=2 mem=128 am=256 timeout=300
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    -m) mem=$2; shift 2 ;;
    -M) am=$2; shift 2 ;;
    -t) timeout=$2; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
for v in "$n" "$mem" "$am" "$timeout"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "option value '$v' is not a positive integer"
done
if [[ $# -eq 0 ]]; then set -- echo distshell-ok; fi
cmd=$1
shift
args="$*"

"$HERE/minicluster.sh" build >&2
if [[ -z "${JAVA_HOME:-}" ]]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
fi
jar="$(ls "$DS_DIR"/target/lib/hadoop-yarn-applications-distributedshell-*.jar)"

client_args=(
  -jar "$jar"
  -appname sluice-distshell-baseline
  -num_containers "$n"
  -container_memory "$mem"
  -master_memory "$am"
  -timeout $((timeout * 1000))
  -shell_command "$cmd"
)
[[ -n "$args" ]] && client_args+=(-shell_args "$args")

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$(date +%s%N)
set +e
"$JAVA_HOME/bin/java" -Xmx256m -Djava.net.preferIPv4Stack=true \
  -Dlog4j.configuration="file:$DS_DIR/log4j.properties" \
  -cp "$CONF:$DS_DIR/target/lib/*" \
  org.apache.hadoop.yarn.applications.distributedshell.Client "${client_args[@]}" 2> >(tee "$log" >&2)
rc=$?
set -e
end=$(date +%s%N)
wait # for tee
app="$(grep -o 'application_[0-9]*_[0-9]*' "$log" | head -n 1 || true)"
status=FAILED
[[ $rc -eq 0 ]] && status=SUCCEEDED
echo "distshell: app=${app:-unknown} containers=$n status=$status elapsed_ms=$(((end - start) / 1000000))"
[[ $rc -eq 0 ]]
