#!/usr/bin/env bash
# Builds the Flink REST checker (integration/flinkrest: Apache Flink 2.3's
# REST message classes and CLI from Maven Central) and prints the Java
# classpath that runs it: `java -cp CP io.github.sluice.flinkrest.Check
# BASE_URL PATH=CLASS...` parses each response with Flink's strict object
# mapper; `java -cp CP org.apache.flink.client.cli.CliFrontend` is Flink's
# own CLI. The cluster tests find it through SLUICE_FLINK_CLASSPATH.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="$HERE/../flinkrest"
command -v mvn >/dev/null || { echo "flinkrest: maven is required" >&2; exit 1; }
cd "$DIR"
mvn -q -B dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
mkdir -p target/classes
javac -d target/classes -cp "$(cat target/classpath.txt)" src/main/java/io/github/sluice/flinkrest/Check.java >&2
echo "$DIR/target/classes:$(cat target/classpath.txt)"
