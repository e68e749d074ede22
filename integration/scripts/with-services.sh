#!/usr/bin/env bash
# Runs a command with the real services the tests need: a mini YARN + HDFS
# cluster and a Kafka KRaft broker, started once and shared by every test
# package through SLUICE_HADOOP_CONF_DIR and SLUICE_KAFKA_BOOTSTRAP. Both
# are stopped when the command ends, whatever its outcome. A service that
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
kafka_dir="$(mktemp -d -t sluice-kafka.XXXXXX)"
cleanup() {
  "$HERE/minicluster.sh" stop "$hadoop_dir" || true
  "$HERE/kafka.sh" stop "$kafka_dir" || true
  rm -rf "$hadoop_dir" "$kafka_dir"
}
trap cleanup EXIT

echo "with-services: starting the mini YARN/HDFS cluster and the Kafka broker"
"$HERE/minicluster.sh" start "$hadoop_dir" >/dev/null
bootstrap="$("$HERE/kafka.sh" start "$kafka_dir" | tail -n 1)"
export SLUICE_HADOOP_CONF_DIR="$hadoop_dir"
export SLUICE_KAFKA_BOOTSTRAP="$bootstrap"
echo "with-services: hadoop conf $SLUICE_HADOOP_CONF_DIR, kafka $SLUICE_KAFKA_BOOTSTRAP"
"$@"
