#!/bin/bash
# The entry point of every node of the dockerized test cluster: writes the node's configuration
# from its environment and runs its daemons in the foreground, each one's log on this
# container's output with a [daemon] prefix.
#
#   node.sh master   NameNode + ResourceManager (the master host)
#   node.sh worker   DataNode + NodeManager (a worker host); the container lives as long as its
#                    NodeManager, so a test may stop the DataNode alone (node.sh stop-datanode)
#   node.sh kafka    one Apache Kafka KRaft node, broker and controller
#   node.sh stop-datanode | start-datanode   (docker exec) stop or start this worker's DataNode
#   node.sh client-conf DIR   write a client's conf/, bootstrap and hosts for this cluster to DIR
#
# Environment (integration/scripts/docker-cluster.sh sets it):
#   SLUICE_ADDRESS       the address this node publishes (its IP on the cluster network; clients
#                        outside the containers, on the Docker host, use it)
#   SLUICE_MASTER        the master's address (NameNode RPC :8020, ResourceManager :8032)
#   SLUICE_HEAP          -Xmx of each JVM (default 256m)
#   SLUICE_NM_MEMORY_MB, SLUICE_NM_VCORES   what a NodeManager offers (default 2048, 4)
#   SLUICE_KAFKA_NODE_ID, SLUICE_KAFKA_VOTERS (id@host:9093,...), SLUICE_KAFKA_CLUSTER_ID
#   SLUICE_KAFKA_MIN_ISR, SLUICE_KAFKA_RF   (defaults 2 and 3)
set -euo pipefail

role=${1:?usage: node.sh master|worker|kafka|stop-datanode|start-datanode}
addr=${SLUICE_ADDRESS:?SLUICE_ADDRESS is not set}
heap=${SLUICE_HEAP:-256m}
conf=/etc/sluice/hadoop
run=/run/sluice
mkdir -p "$conf" "$run" /data

# Java 17 closes JDK internals that Hadoop 3.4 reaches into (as integration/scripts/minicluster.sh).
opens=()
for p in java.lang java.lang.reflect java.io java.net java.nio java.util java.util.concurrent \
  java.util.concurrent.atomic java.util.regex java.security sun.nio.ch sun.net.dns sun.net.util \
  sun.security.x509 sun.security.util; do
  opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
opens+=(--add-exports=java.base/sun.net.dns=ALL-UNNAMED --add-exports=java.base/sun.net.util=ALL-UNNAMED)
jvm=(-Xmx"$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true "${opens[@]}")

# site FILE NAME=VALUE...: a Hadoop configuration file.
site() {
  local f=$conf/$1
  shift
  {
    echo '<?xml version="1.0"?>'
    echo '<configuration>'
    local kv
    for kv in "$@"; do
      printf '  <property><name>%s</name><value>%s</value></property>\n' "${kv%%=*}" "${kv#*=}"
    done
    echo '</configuration>'
  } >"$f.tmp"
  mv "$f.tmp" "$f"
}

hadoop_conf() {
  local m=${SLUICE_MASTER:?SLUICE_MASTER is not set}
  site core-site.xml "fs.defaultFS=hdfs://$m:8020" "hadoop.tmp.dir=/data/tmp"
  # Addresses published are SLUICE_ADDRESS (an IP clients on the host reach); servers bind to
  # every interface, so a container cut off and reconnected serves again on the same address.
  site hdfs-site.xml \
    "dfs.namenode.rpc-address=$m:8020" "dfs.namenode.rpc-bind-host=0.0.0.0" \
    "dfs.namenode.http-address=$m:9870" "dfs.namenode.http-bind-host=0.0.0.0" \
    "dfs.namenode.servicerpc-bind-host=0.0.0.0" \
    "dfs.namenode.name.dir=/data/dfs/name" "dfs.datanode.data.dir=/data/dfs/data" \
    "dfs.datanode.hostname=$addr" \
    "dfs.datanode.address=0.0.0.0:9866" "dfs.datanode.http.address=0.0.0.0:9864" "dfs.datanode.ipc.address=0.0.0.0:9867" \
    "dfs.namenode.datanode.registration.ip-hostname-check=false" \
    "dfs.replication=2" "dfs.namenode.replication.min=1" "dfs.permissions.enabled=true" \
    "dfs.namenode.safemode.extension=0" "dfs.namenode.safemode.min.datanodes=1" \
    "dfs.heartbeat.interval=1" "dfs.namenode.heartbeat.recheck-interval=5000" \
    "dfs.client.block.write.replace-datanode-on-failure.best-effort=true"
  site yarn-site.xml \
    "yarn.resourcemanager.hostname=$m" "yarn.resourcemanager.bind-host=0.0.0.0" \
    "yarn.nodemanager.hostname=$addr" "yarn.nodemanager.bind-host=0.0.0.0" \
    "yarn.nodemanager.address=$addr:45454" \
    "yarn.nodemanager.resource.memory-mb=${SLUICE_NM_MEMORY_MB:-2048}" \
    "yarn.nodemanager.resource.cpu-vcores=${SLUICE_NM_VCORES:-4}" \
    "yarn.scheduler.minimum-allocation-mb=64" "yarn.scheduler.maximum-allocation-mb=${SLUICE_NM_MEMORY_MB:-2048}" \
    "yarn.scheduler.maximum-allocation-vcores=${SLUICE_NM_VCORES:-4}" \
    "yarn.nodemanager.pmem-check-enabled=false" "yarn.nodemanager.vmem-check-enabled=false" \
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage=99.0" \
    "yarn.nodemanager.local-dirs=/data/nm-local" "yarn.nodemanager.log-dirs=/data/nm-logs" \
    "yarn.log-aggregation-enable=false" "yarn.nodemanager.delete.debug-delay-sec=0" \
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=500" \
    "yarn.nm.liveness-monitor.expiry-interval-ms=15000" \
    "yarn.am.liveness-monitor.expiry-interval-ms=15000" \
    "yarn.resourcemanager.am.max-attempts=2" \
    "yarn.nodemanager.env-whitelist=JAVA_HOME,HADOOP_CONF_DIR,PATH,LANG,TZ"
  site capacity-scheduler.xml \
    "yarn.scheduler.capacity.root.queues=default" "yarn.scheduler.capacity.root.default.capacity=100" \
    "yarn.scheduler.capacity.root.default.maximum-capacity=100" \
    "yarn.scheduler.capacity.maximum-am-resource-percent=0.5" \
    "yarn.scheduler.capacity.per-node-heartbeat.maximum-container-assignments=1"
  cat >"$conf/log4j.properties" <<'LOG'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n
log4j.logger.org.apache.hadoop.ipc.Server=WARN
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
LOG
}

# daemon NAME MAINCLASS [ARGS...]: start a Hadoop daemon in the background; its pid in $run/NAME.pid.
daemon() {
  local name=$1 main=$2
  shift 2
  HADOOP_CONF_DIR=$conf java "${jvm[@]}" -Dproc_"$name" -cp "$conf:/opt/sluice/hadoop/lib/*" "$main" "$@" \
    > >(sed -u "s/^/[$name] /") 2>&1 &
  echo $! >"$run/$name.pid"
}

pids=()
stop_all() {
  local p
  for p in "${pids[@]}" $(cat "$run"/*.pid 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
  wait || true
  exit 0
}

case "$role" in
  master)
    hadoop_conf
    if [[ ! -d /data/dfs/name/current ]]; then
      HADOOP_CONF_DIR=$conf java "${jvm[@]}" -cp "$conf:/opt/sluice/hadoop/lib/*" \
        org.apache.hadoop.hdfs.server.namenode.NameNode -format -force -nonInteractive 2>&1 | tail -n 3 | sed 's/^/[format] /'
    fi
    trap stop_all TERM INT
    daemon namenode org.apache.hadoop.hdfs.server.namenode.NameNode
    pids+=("$(cat $run/namenode.pid)")
    daemon resourcemanager org.apache.hadoop.yarn.server.resourcemanager.ResourceManager
    pids+=("$(cat $run/resourcemanager.pid)")
    # The master is down when either daemon is.
    wait -n "${pids[@]}" || true
    echo "[node] a master daemon exited; stopping" && stop_all
    ;;
  worker)
    hadoop_conf
    trap stop_all TERM INT
    daemon datanode org.apache.hadoop.hdfs.server.datanode.DataNode
    daemon nodemanager org.apache.hadoop.yarn.server.nodemanager.NodeManager
    pids+=("$(cat $run/nodemanager.pid)")
    wait "${pids[0]}" || true
    echo "[node] the NodeManager exited; stopping" && stop_all
    ;;
  stop-datanode)
    p=$(cat "$run/datanode.pid")
    kill -"${2:-KILL}" "$p"
    while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
    ;;
  start-datanode)
    # Through the container's PID 1 output, so its log stays in `docker logs`.
    hadoop_conf
    HADOOP_CONF_DIR=$conf setsid java "${jvm[@]}" -Dproc_datanode -cp "$conf:/opt/sluice/hadoop/lib/*" \
      org.apache.hadoop.hdfs.server.datanode.DataNode >/proc/1/fd/1 2>&1 </dev/null &
    echo $! >"$run/datanode.pid"
    ;;
  kafka)
    id=${SLUICE_KAFKA_NODE_ID:?} voters=${SLUICE_KAFKA_VOTERS:?} cid=${SLUICE_KAFKA_CLUSTER_ID:?}
    rf=${SLUICE_KAFKA_RF:-3} isr=${SLUICE_KAFKA_MIN_ISR:-2}
    mkdir -p /etc/sluice/kafka
    cat >/etc/sluice/kafka/server.properties <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093
advertised.listeners=PLAINTEXT://$addr:9092
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=/data/kafka
num.partitions=3
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
unclean.leader.election.enable=false
PROPS
    cat >/etc/sluice/kafka/log4j2.properties <<'LOG'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
LOG
    kjvm=(-Xmx"$heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true
      -Dlog4j2.configurationFile=/etc/sluice/kafka/log4j2.properties -cp "/opt/sluice/kafka/lib/*")
    if [[ ! -f /data/kafka/meta.properties ]]; then
      java "${kjvm[@]}" kafka.tools.StorageTool format -t "$cid" -c /etc/sluice/kafka/server.properties 2>&1 | sed 's/^/[format] /'
    fi
    exec java "${kjvm[@]}" kafka.Kafka /etc/sluice/kafka/server.properties
    ;;
  client-conf)
    # What a client outside the containers needs (docker-compose.yml's client-conf service; no
    # daemon): DIR/conf (HADOOP_CONF_DIR), DIR/bootstrap (the brokers), DIR/hosts (the nodes' names,
    # for /etc/hosts). Written to temporary names and renamed, so a reader never sees half a file.
    out=${2:?usage: node.sh client-conf DIR}
    m=${SLUICE_MASTER:?SLUICE_MASTER is not set}
    conf=$out/conf
    mkdir -p "$conf"
    site core-site.xml "fs.defaultFS=hdfs://$m:8020"
    site hdfs-site.xml "dfs.namenode.rpc-address=$m:8020" "dfs.namenode.http-address=$m:9870" \
      "dfs.replication=2" "dfs.client.block.write.replace-datanode-on-failure.best-effort=true"
    site yarn-site.xml "yarn.resourcemanager.hostname=$m" \
      "yarn.resourcemanager.address=$m:8032" "yarn.resourcemanager.scheduler.address=$m:8030" \
      "yarn.resourcemanager.webapp.address=$m:8088" "yarn.resourcemanager.am.max-attempts=2"
    bootstrap="" hosts=""
    for kv in ${SLUICE_NODES:?SLUICE_NODES is not set}; do
      name=${kv%%=*} ip=${kv#*=}
      hosts+="$ip $name sluice-$name"$'\n'
      [[ $name == kafka* ]] && bootstrap+="${bootstrap:+,}$ip:9092"
    done
    printf '%s' "$hosts" >"$out/hosts.tmp" && mv "$out/hosts.tmp" "$out/hosts"
    echo "$bootstrap" >"$out/bootstrap.tmp" && mv "$out/bootstrap.tmp" "$out/bootstrap"
    chown -R "${SLUICE_OWNER:-0:0}" "$out"
    ;;
  *)
    echo "node.sh: unknown role $role" >&2
    exit 2
    ;;
esac
