#!/usr/bin/env bash
# Builds the Flink SQL runner (integration/flinksql: Apache Flink 2.3's
# TableEnvironment, planner, runtime, Kafka and upsert-kafka connectors and
# json format from Maven Central, and our one class Run.java) and prints the
# Java classpath that runs it:
#
#   java -cp CP io.github.sluice.flinksql.Run [--parallelism N] SCRIPT...
#
# runs each SQL script in turn on a local MiniCluster in that one JVM (see
# Run.java). The comparison tests (integration/flinksql) find it through
# SLUICE_FLINK_SQL_CLASSPATH. The classpath (target/classpath.txt) and the
# class (target/classes) are rebuilt only when the pom or the source is newer.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="$(cd "$HERE/../flinksql" && pwd)"
command -v mvn >/dev/null || { echo "flinksql: maven is required" >&2; exit 1; }
command -v javac >/dev/null || { echo "flinksql: a JDK 17 (javac) is required" >&2; exit 1; }
cd "$DIR"
if [[ ! -s target/classpath.txt || pom.xml -nt target/classpath.txt ]]; then
  mvn -q -B dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
fi
src=src/main/java/io/github/sluice/flinksql/Run.java
stamp=target/classes/.sluice-built
if [[ ! -f "$stamp" || "$src" -nt "$stamp" || target/classpath.txt -nt "$stamp" ]]; then
  mkdir -p target/classes
  javac -d target/classes -cp "$(cat target/classpath.txt)" "$src" >&2
  touch "$stamp"
fi
echo "$DIR/target/classes:$DIR/src/main/resources:$(cat target/classpath.txt)"
