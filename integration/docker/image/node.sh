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
#   node.sh kdc      an MIT Kerberos KDC (the secure variant): creates the realm, a principal per
#                    daemon and host and the client's, writes their keytabs and the krb5.conf to
#                    /kerberos (shared with the nodes and, bind-mounted, the Docker host)
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
#   SLUICE_SECURE=true   the secure variant (docker-compose.secure.yml): Kerberos on every Hadoop
#                        daemon and a SASL_PLAINTEXT GSSAPI listener on :9094 of every broker; the
#                        nodes wait for the KDC's keytabs in /kerberos (HOST.keytab, krb5.conf)
#   SLUICE_REALM         the Kerberos realm (default DOCKER.SLUICE.TEST)
#   SLUICE_KDC           the KDC's address (the kdc role's SLUICE_ADDRESS)
#   SLUICE_NODES         name=IP ... of every node (kdc: a principal per host; client-conf)
set -euo pipefail

role=${1:?usage: node.sh master|worker|kafka|kdc|client-conf|stop-datanode|start-datanode}
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

secure=${SLUICE_SECURE:-false}
realm=${SLUICE_REALM:-DOCKER.SLUICE.TEST}
host=$(hostname)

# wait_keytab: in the secure variant, wait for the KDC to have written this host's keytab and the
# realm's krb5.conf to /kerberos (the kdc service is healthy once it has; docker-compose starts
# the nodes after that, but a restarted node checks again), then install the krb5.conf.
wait_keytab() {
  [[ $secure == true ]] || return 0
  local i
  for ((i = 0; i < 600; i++)); do
    [[ -s /kerberos/$host.keytab && -s /kerberos/krb5.conf ]] && break
    sleep 0.2
  done
  [[ -s /kerberos/$host.keytab ]] || { echo "node.sh: no /kerberos/$host.keytab from the KDC after 120s" >&2; exit 1; }
  cp /kerberos/krb5.conf /etc/krb5.conf
  jvm+=(-Djava.security.krb5.conf=/etc/krb5.conf)
}

# secure_props: the Hadoop properties of the secure variant. Servers log in from their host's
# keytab (nn/, rm/, HTTP/ on the master; dn/, nm/, HTTP/ on a worker; _HOST is the host name,
# which every container resolves to its address, forward and reverse: docker-compose.secure.yml's
# extra_hosts). A DataNode that is not root gets no privileged ports: SASL on its data transfer
# port (block access tokens; privacy with AES, as the secure minicluster) and
# ignore.secure.ports.for.testing instead of HTTPS, as Hadoop's own tests do (HTTPS_ONLY would
# need a keystore on every node and TLS in every web check). Containers run as the NodeManager's
# user (DefaultContainerExecutor).
secure_core=()
secure_hdfs=()
secure_yarn=()
if [[ $secure == true ]]; then
  kt=/kerberos/$host.keytab
  secure_core=("hadoop.security.authentication=kerberos" "hadoop.security.authorization=false"
    "hadoop.rpc.protection=authentication,integrity,privacy")
  secure_hdfs=("dfs.namenode.kerberos.principal=nn/_HOST@$realm" "dfs.namenode.keytab.file=$kt"
    "dfs.namenode.kerberos.internal.spnego.principal=HTTP/_HOST@$realm"
    "dfs.datanode.kerberos.principal=dn/_HOST@$realm" "dfs.datanode.keytab.file=$kt"
    "dfs.web.authentication.kerberos.principal=HTTP/_HOST@$realm" "dfs.web.authentication.kerberos.keytab=$kt"
    "dfs.block.access.token.enable=true" "dfs.data.transfer.protection=privacy"
    "dfs.encrypt.data.transfer.cipher.suites=AES/CTR/NoPadding"
    "ignore.secure.ports.for.testing=true" "dfs.http.policy=HTTP_ONLY")
  secure_yarn=("yarn.resourcemanager.principal=rm/_HOST@$realm" "yarn.resourcemanager.keytab=$kt"
    "yarn.nodemanager.principal=nm/_HOST@$realm" "yarn.nodemanager.keytab=$kt"
    "yarn.resourcemanager.webapp.spnego-principal=HTTP/_HOST@$realm" "yarn.resourcemanager.webapp.spnego-keytab-file=$kt"
    "yarn.nodemanager.webapp.spnego-principal=HTTP/_HOST@$realm" "yarn.nodemanager.webapp.spnego-keytab-file=$kt"
    "yarn.timeline-service.enabled=false")
fi

# pub is the name this node's daemons publish (DataNode and NodeManager ids, the GSSAPI listener):
# its address in the plain cluster; in the secure one its host name, the _HOST of its principals.
pub=$addr
[[ $secure == true ]] && pub=$host

hadoop_conf() {
  local m=${SLUICE_MASTER:?SLUICE_MASTER is not set}
  site core-site.xml "fs.defaultFS=hdfs://$m:8020" "hadoop.tmp.dir=/data/tmp" "${secure_core[@]}"
  # Addresses published are SLUICE_ADDRESS (an IP clients on the host reach); servers bind to
  # every interface, so a container cut off and reconnected serves again on the same address.
  site hdfs-site.xml \
    "dfs.namenode.rpc-address=$m:8020" "dfs.namenode.rpc-bind-host=0.0.0.0" \
    "dfs.namenode.http-address=$m:9870" "dfs.namenode.http-bind-host=0.0.0.0" \
    "dfs.namenode.servicerpc-bind-host=0.0.0.0" \
    "dfs.namenode.name.dir=/data/dfs/name" "dfs.datanode.data.dir=/data/dfs/data" \
    "dfs.datanode.hostname=$pub" \
    "dfs.datanode.address=0.0.0.0:9866" "dfs.datanode.http.address=0.0.0.0:9864" "dfs.datanode.ipc.address=0.0.0.0:9867" \
    "dfs.namenode.datanode.registration.ip-hostname-check=false" \
    "dfs.replication=2" "dfs.namenode.replication.min=1" "dfs.permissions.enabled=true" \
    "dfs.namenode.safemode.extension=0" "dfs.namenode.safemode.min.datanodes=1" \
    "dfs.heartbeat.interval=1" "dfs.namenode.heartbeat.recheck-interval=5000" \
    "dfs.client.block.write.replace-datanode-on-failure.best-effort=true" "${secure_hdfs[@]}"
  # Logs are aggregated to HDFS (/tmp/logs) when an application ends, as on a production cluster:
  # `yarn logs -applicationId` works from the Docker host. The NodeManager keeps an application's
  # local directories (its container logs in /data/nm-logs, DIR/nm-logs/workerN on the Docker
  # host) 10 minutes after it ends (delete.debug-delay-sec), so tests read them there too. Not in the secure variant: there the
  # NodeManager opens container logs through SecureIOUtils, which needs Hadoop's native library
  # (libhadoop.so, not in the image) and kills the NodeManager without it.
  local aggregate=true
  [[ $secure == true ]] && aggregate=false
  site yarn-site.xml \
    "yarn.resourcemanager.hostname=$m" "yarn.resourcemanager.bind-host=0.0.0.0" \
    "yarn.nodemanager.hostname=$pub" "yarn.nodemanager.bind-host=0.0.0.0" \
    "yarn.nodemanager.address=$pub:45454" \
    "yarn.nodemanager.resource.memory-mb=${SLUICE_NM_MEMORY_MB:-2048}" \
    "yarn.nodemanager.resource.cpu-vcores=${SLUICE_NM_VCORES:-4}" \
    "yarn.scheduler.minimum-allocation-mb=64" "yarn.scheduler.maximum-allocation-mb=${SLUICE_NM_MEMORY_MB:-2048}" \
    "yarn.scheduler.maximum-allocation-vcores=${SLUICE_NM_VCORES:-4}" \
    "yarn.nodemanager.pmem-check-enabled=false" "yarn.nodemanager.vmem-check-enabled=false" \
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage=99.0" \
    "yarn.nodemanager.local-dirs=/data/nm-local" "yarn.nodemanager.log-dirs=/data/nm-logs" \
    "yarn.log-aggregation-enable=$aggregate" "yarn.nodemanager.remote-app-log-dir=/tmp/logs" \
    "yarn.nodemanager.delete.debug-delay-sec=600" \
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=500" \
    "yarn.nm.liveness-monitor.expiry-interval-ms=15000" \
    "yarn.am.liveness-monitor.expiry-interval-ms=15000" \
    "yarn.resourcemanager.am.max-attempts=2" \
    "yarn.nodemanager.env-whitelist=JAVA_HOME,HADOOP_CONF_DIR,PATH,LANG,TZ" "${secure_yarn[@]}"
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
    wait_keytab
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
    if [[ $secure == true ]]; then
      # HDFS as a secure cluster's administrator leaves it: a world-writable /tmp (log
      # aggregation, tests) and the client principal's home, owned by it. Done as the NameNode's
      # principal (the superuser) once HDFS has left safe mode; $run/hdfs-ready says it is done.
      (
        kinit -k -t "/kerberos/$host.keytab" "nn/$host@$realm" || exit 1
        fsh() { HADOOP_CONF_DIR=$conf java "${jvm[@]}" -cp "$conf:/opt/sluice/hadoop/lib/*" org.apache.hadoop.fs.FsShell "$@" 2>&1; }
        user=${SLUICE_CLIENT_USER:-sluice}
        for ((i = 0; i < 120; i++)); do
          if fsh -mkdir -p /tmp /user/"$user" >/dev/null; then
            fsh -chmod 1777 /tmp && fsh -chown "$user:$user" /user/"$user" && touch "$run/hdfs-ready" &&
              echo "[node] HDFS: /tmp (1777) and /user/$user (owned by $user) made" && exit 0
            exit 1
          fi
          sleep 1
        done
        echo "[node] HDFS: could not make /tmp and /user/$user in 120s"
      ) 2>&1 | sed -u 's/^/[hdfs-setup] /' &
    fi
    # The master is down when either daemon is.
    wait -n "${pids[@]}" || true
    echo "[node] a master daemon exited; stopping" && stop_all
    ;;
  worker)
    wait_keytab
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
    wait_keytab
    hadoop_conf
    HADOOP_CONF_DIR=$conf setsid java "${jvm[@]}" -Dproc_datanode -cp "$conf:/opt/sluice/hadoop/lib/*" \
      org.apache.hadoop.hdfs.server.datanode.DataNode >/proc/1/fd/1 2>&1 </dev/null &
    echo $! >"$run/datanode.pid"
    ;;
  kafka)
    id=${SLUICE_KAFKA_NODE_ID:?} voters=${SLUICE_KAFKA_VOTERS:?} cid=${SLUICE_KAFKA_CLUSTER_ID:?}
    rf=${SLUICE_KAFKA_RF:-3} isr=${SLUICE_KAFKA_MIN_ISR:-2}
    mkdir -p /etc/sluice/kafka
    # The secure variant: a SASL_PLAINTEXT listener with GSSAPI on :9094, advertised under the
    # host name (clients ask the KDC for kafka/HOST), the broker logged in as kafka/HOST from
    # its keytab. Brokers and controllers still talk PLAINTEXT among themselves.
    gssapi_listener="" gssapi_advertised="" gssapi_protocol="" gssapi_props=""
    kafka_krb=()
    if [[ $secure == true ]]; then
      wait_keytab
      kafka_krb=(-Djava.security.krb5.conf=/etc/krb5.conf)
      gssapi_listener=",SASL_PLAINTEXT://0.0.0.0:9094"
      gssapi_advertised=",SASL_PLAINTEXT://$host:9094"
      gssapi_protocol=",SASL_PLAINTEXT:SASL_PLAINTEXT"
      gssapi_props="sasl.enabled.mechanisms=GSSAPI
sasl.kerberos.service.name=kafka
listener.name.sasl_plaintext.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab=\"/kerberos/$host.keytab\" principal=\"kafka/$host@$realm\";"
    fi
    cat >/etc/sluice/kafka/server.properties <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093$gssapi_listener
advertised.listeners=PLAINTEXT://$addr:9092$gssapi_advertised
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$gssapi_protocol
$gssapi_props
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
    kjvm=(-Xmx"$heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true "${kafka_krb[@]}"
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
    if [[ $secure == true ]]; then
      # The servers' principals with _HOST, which a client replaces with the host of the address
      # it dials: the secure variant's addresses are host names (master:8020), as a Kerberized
      # cluster's are; DIR/hosts (or DNS) resolves them.
      site core-site.xml "fs.defaultFS=hdfs://$m:8020" "hadoop.security.authentication=kerberos" \
        "hadoop.rpc.protection=authentication,integrity,privacy"
      site hdfs-site.xml "dfs.namenode.rpc-address=$m:8020" "dfs.namenode.http-address=$m:9870" \
        "dfs.replication=2" "dfs.client.block.write.replace-datanode-on-failure.best-effort=true" \
        "dfs.namenode.kerberos.principal=nn/_HOST@$realm" "dfs.datanode.kerberos.principal=dn/_HOST@$realm" \
        "dfs.block.access.token.enable=true" "dfs.data.transfer.protection=privacy" \
        "dfs.encrypt.data.transfer.cipher.suites=AES/CTR/NoPadding"
      site yarn-site.xml "yarn.resourcemanager.hostname=$m" \
        "yarn.resourcemanager.address=$m:8032" "yarn.resourcemanager.scheduler.address=$m:8030" \
        "yarn.resourcemanager.webapp.address=$m:8088" "yarn.resourcemanager.am.max-attempts=2" \
        "yarn.resourcemanager.principal=rm/_HOST@$realm" "yarn.nodemanager.principal=nm/_HOST@$realm"
    fi
    bootstrap="" gssapi="" hosts=""
    for kv in ${SLUICE_NODES:?SLUICE_NODES is not set}; do
      name=${kv%%=*} ip=${kv#*=}
      hosts+="$ip $name sluice-$name"$'\n'
      [[ $name == kafka* ]] && bootstrap+="${bootstrap:+,}$ip:9092" && gssapi+="${gssapi:+,}$name:9094"
    done
    printf '%s' "$hosts" >"$out/hosts.tmp" && mv "$out/hosts.tmp" "$out/hosts"
    echo "$bootstrap" >"$out/bootstrap.tmp" && mv "$out/bootstrap.tmp" "$out/bootstrap"
    if [[ $secure == true ]]; then
      echo "$gssapi" >"$out/gssapi_bootstrap.tmp" && mv "$out/gssapi_bootstrap.tmp" "$out/gssapi_bootstrap"
    fi
    chown -R "${SLUICE_OWNER:-0:0}" "$out"
    ;;
  kdc)
    # The secure variant's KDC (MIT krb5kdc, TCP and UDP :88). At every start it creates the
    # realm afresh and writes to /kerberos (a directory the nodes mount read-only and the
    # Docker host sees as DIR/kerberos):
    #   krb5.conf         the realm, the KDC at SLUICE_ADDRESS:88 (TCP), every host in the realm
    #   HOST.keytab       the principals of one host: nn/, rm/, HTTP/ (master); dn/, nm/, HTTP/
    #                     (workerN); kafka/ (kafkaN)
    #   USER.keytab       the client principal USER@REALM (SLUICE_CLIENT_USER, default sluice)
    # then /run/kdc-ready, which the service's healthcheck waits for (the nodes start after it).
    user=${SLUICE_CLIENT_USER:-sluice}
    rm -f /run/kdc-ready
    mkdir -p /kerberos /etc/krb5kdc /var/lib/krb5kdc
    find /kerberos -mindepth 1 -delete
    domains=""
    for kv in ${SLUICE_NODES:?SLUICE_NODES is not set}; do
      domains+="  ${kv%%=*} = $realm"$'\n'
    done
    cat >/kerberos/krb5.conf.tmp <<KRB5
[libdefaults]
  default_realm = $realm
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
  ticket_lifetime = 10h
  renew_lifetime = 7d
  forwardable = true
  default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
  $realm = {
    kdc = $addr:88
    admin_server = $addr:749
  }

[domain_realm]
$domains
KRB5
    cp /kerberos/krb5.conf.tmp /etc/krb5.conf
    cat >/etc/krb5kdc/kdc.conf <<KDC
[logging]
  kdc = STDERR

[kdcdefaults]
  kdc_ports = 88
  kdc_tcp_ports = 88

[realms]
  $realm = {
    database_name = /var/lib/krb5kdc/principal
    key_stash_file = /etc/krb5kdc/stash
    max_life = 10h
    max_renewable_life = 7d
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    acl_file = /etc/krb5kdc/kadm5.acl
  }
KDC
    : >/etc/krb5kdc/kadm5.acl
    rm -f /var/lib/krb5kdc/principal* /etc/krb5kdc/stash
    kdb5_util create -s -r "$realm" -P "$(head -c 24 /dev/urandom | base64)" >/dev/null
    kadm() { kadmin.local -r "$realm" -q "$1" >/dev/null; }
    kadm "modprinc -maxrenewlife 7d krbtgt/$realm@$realm"
    keytab() { # keytab FILE PRINCIPAL...
      local f=$1 p
      shift
      for p in "$@"; do
        kadm "addprinc -randkey -maxrenewlife 7d $p@$realm"
        kadm "ktadd -k $f.tmp $p@$realm"
      done
      chmod 600 "$f.tmp"
      mv "$f.tmp" "$f"
    }
    for kv in $SLUICE_NODES; do
      name=${kv%%=*}
      case $name in
        master) keytab /kerberos/master.keytab nn/master rm/master HTTP/master ;;
        worker*) keytab "/kerberos/$name.keytab" "dn/$name" "nm/$name" "HTTP/$name" ;;
        kafka*) keytab "/kerberos/$name.keytab" "kafka/$name" ;;
      esac
    done
    keytab "/kerberos/$user.keytab" "$user"
    # The client's files belong to the user who started the cluster; the keytabs stay 0600.
    chown -R "${SLUICE_OWNER:-0:0}" /kerberos
    mv /kerberos/krb5.conf.tmp /kerberos/krb5.conf
    touch /run/kdc-ready
    echo "[kdc] realm $realm: principals and keytabs in /kerberos"
    exec krb5kdc -n -r "$realm"
    ;;
  *)
    echo "node.sh: unknown role $role" >&2
    exit 2
    ;;
esac
