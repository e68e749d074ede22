#!/usr/bin/env bash
# Runs a command with the real services the tests need: a mini YARN + HDFS
# cluster, a second one in secure mode (MiniKdc, Kerberos on every server),
# and a Kafka KRaft broker with a PLAINTEXT and a SASL_PLAINTEXT GSSAPI
# listener (on the secure cluster's KDC), started once and shared by every
# test package through SLUICE_HADOOP_CONF_DIR, SLUICE_HADOOP_SECURE_CONF_DIR,
# SLUICE_KAFKA_BOOTSTRAP and SLUICE_KAFKA_GSSAPI_BOOTSTRAP. All are stopped
# when the command ends, whatever its outcome. A service that
# fails to build or start fails the run: in CI a missing component is a
# failure, not a skip.
#
#   with-services.sh COMMAND [ARGS...]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

command -v java >/dev/null || { echo "with-services: java (17) is required" >&2; exit 1; }
command -v mvn >/dev/null || { echo "with-services: maven is required (apt-get install maven)" >&2; exit 1; }

"$HERE/minicluster.sh" build
"$HERE/kafka.sh" build

hadoop_dir="$(mktemp -d -t sluice-hadoop.XXXXXX)"
secure_dir="$(mktemp -d -t sluice-hadoop-secure.XXXXXX)"
kafka_dir="$(mktemp -d -t sluice-kafka.XXXXXX)"
cleanup() {
  "$HERE/minicluster.sh" stop "$hadoop_dir" || true
  "$HERE/minicluster.sh" stop "$secure_dir" || true
  "$HERE/kafka.sh" stop "$kafka_dir" || true
  rm -rf "$hadoop_dir" "$secure_dir" "$kafka_dir"
}
trap cleanup EXIT

echo "with-services: starting the mini YARN/HDFS cluster, its secure twin and the Kafka broker"
# The secure cluster starts alongside the others (its own JVM: Kerberos is JVM-wide in Hadoop).
"$HERE/minicluster.sh" start "$secure_dir" --secure --nodemanagers 1 >/dev/null &
secure_pid=$!
"$HERE/minicluster.sh" start "$hadoop_dir" >/dev/null
# The broker's GSSAPI listener needs the KDC, which the secure harness writes KDC_READY for
# seconds after its start (long before its Hadoop servers are up).
deadline=$((SECONDS + ${MINICLUSTER_START_TIMEOUT:-240}))
until [[ -f "$secure_dir/KDC_READY" ]]; do
  kill -0 "$secure_pid" 2>/dev/null || { wait "$secure_pid" || true; echo "with-services: the secure mini cluster died before its KDC was up" >&2; exit 1; }
  ((SECONDS < deadline)) || { echo "with-services: no KDC_READY in $secure_dir" >&2; exit 1; }
  sleep 0.5
done
kdc_field() { sed -n "s/^$1=//p" "$secure_dir/KDC_READY"; }
# Ports: KAFKA_PORT, KAFKA_CONTROLLER_PORT and KAFKA_GSSAPI_PORT (defaults 19092, 19093, 19094).
bootstrap="$("$HERE/kafka.sh" start "$kafka_dir" --port "${KAFKA_PORT:-19092}" --controller-port "${KAFKA_CONTROLLER_PORT:-19093}" \
  --gssapi-port "${KAFKA_GSSAPI_PORT:-19094}" --krb5-conf "$(kdc_field krb5_conf)" \
  --keytab "$(kdc_field kafka_keytab)" --principal "$(kdc_field kafka_principal)" | tail -n 1)"
wait "$secure_pid" || { echo "with-services: the secure mini cluster did not start" >&2; exit 1; }
export SLUICE_HADOOP_CONF_DIR="$hadoop_dir"
export SLUICE_HADOOP_SECURE_CONF_DIR="$secure_dir"
export SLUICE_KAFKA_BOOTSTRAP="$bootstrap"
export SLUICE_KAFKA_GSSAPI_BOOTSTRAP="$(sed -n 's/^gssapi_bootstrap=//p' "$kafka_dir/READY")"
echo "with-services: hadoop conf $SLUICE_HADOOP_CONF_DIR, secure hadoop conf $SLUICE_HADOOP_SECURE_CONF_DIR, kafka $SLUICE_KAFKA_BOOTSTRAP (GSSAPI $SLUICE_KAFKA_GSSAPI_BOOTSTRAP)"
"$@"
