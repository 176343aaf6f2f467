#!/usr/bin/env bash
# Regenerates __cluster_metadata-0 here with Apache Kafka 4.1.1 (KAFKA_VERSION=4.1.1 compat-tests/scripts/install-kafka.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kdir="$here/../../../compat-tests/.cache/kafka-4.1.1"; libs=$kdir/libs
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
kport=19192; cport=19193
cat >"$tmp/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$kport,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$kport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$tmp/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
metadata.log.max.snapshot.interval.ms=1000
PROPS
J() { java -Xmx512m -Dlog4j2.configurationFile="$kdir/tools-log4j2.properties" -cp "$libs/*" "$@"; }
start() { java -Xmx512m -Dlog4j2.configurationFile="$kdir/log4j2.properties" -Dkafka.logs.file="$tmp/kafka.log" -cp "$libs/*" kafka.Kafka "$tmp/server.properties" >>"$tmp/stdout" 2>&1 & pid=$!; until kcat -b 127.0.0.1:$kport -L -m 2 >/dev/null 2>&1; do sleep 0.3; done; }
stop() { kill $pid; wait $pid || true; }
J kafka.tools.StorageTool format -t "$(J kafka.tools.StorageTool random-uuid)" -c "$tmp/server.properties"
start
T() { J org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:$kport "$@"; }
C() { J kafka.admin.ConfigCommand --bootstrap-server 127.0.0.1:$kport "$@"; }
T --create --topic orders --partitions 3 --config retention.ms=86400000 --config max.message.bytes=2000000
T --create --topic compacted --partitions 1 --config cleanup.policy=compact
T --create --topic gone --partitions 2
T --create --topic grown --partitions 1
T --delete --topic gone
T --alter --topic grown --partitions 2
C --alter --entity-type topics --entity-name orders --delete-config max.message.bytes
C --alter --entity-type topics --entity-name orders --add-config segment.bytes=1048576
C --alter --entity-type brokers --entity-name 1 --add-config log.cleaner.threads=2
C --alter --entity-type brokers --entity-default --add-config log.retention.ms=604800000
echo k1:v1 | kcat -b 127.0.0.1:$kport -P -t orders -K: -p 0
stop
start
T --create --topic late --partitions 1 --config retention.bytes=1000000
sleep 3
stop

out="$here/__cluster_metadata-0"
rm -rf "$out" && mkdir -p "$out"
cp "$tmp/data/__cluster_metadata-0/00000000000000000000.log" "$out/"
cp "$tmp/data/__cluster_metadata-0"/*.checkpoint "$out/"
chmod 644 "$out"/*
echo "keep one snapshot from before the restart and one after late was created, then update"
echo "the topic ids, offsets and snapshot names in kraftmeta_test.go:"
ls "$out"
