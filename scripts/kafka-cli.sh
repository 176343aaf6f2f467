#!/usr/bin/env bash
# Runs one of Apache Kafka's own command-line tools against Strata (or any broker), from
# the Kafka 4.4.0 jars compat-tests/scripts/install-kafka.sh caches in
# compat-tests/.cache/kafka-4.4.0/libs (installed on first use; needs java 17+, and mvn then).
# Usage: scripts/kafka-cli.sh TOOL [ARGS...]
#   TOOL: topics console-producer console-consumer consumer-groups configs acls
#         share-groups console-share-consumer delete-records metadata-quorum
#         leader-election reassign-partitions dump-log   (Kafka's bin/kafka-TOOL.sh)
# --bootstrap-server 127.0.0.1:9092 (`make run`'s broker) is added unless ARGS name a
# server; dump-log reads segment files and takes none. Tool logging: warnings and errors
# on stderr (compat-tests/.cache/kafka-4.4.0/tools-log4j2.properties).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kdir="$root/compat-tests/.cache/kafka-4.4.0"

usage() {
	sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

[ $# -ge 1 ] || usage
tool=$1
shift
bootstrap=yes
case "$tool" in
topics) class=org.apache.kafka.tools.TopicCommand ;;
console-producer) class=org.apache.kafka.tools.ConsoleProducer ;;
console-consumer) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
consumer-groups) class=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
share-groups) class=org.apache.kafka.tools.consumer.group.ShareGroupCommand ;;
console-share-consumer) class=org.apache.kafka.tools.consumer.ConsoleShareConsumer ;;
configs) class=org.apache.kafka.tools.ConfigCommand ;;
acls) class=org.apache.kafka.tools.AclCommand ;;
delete-records) class=org.apache.kafka.tools.DeleteRecordsCommand ;;
metadata-quorum) class=org.apache.kafka.tools.MetadataQuorumCommand ;;
leader-election) class=org.apache.kafka.tools.LeaderElectionCommand ;;
reassign-partitions) class=org.apache.kafka.tools.reassign.ReassignPartitionsCommand ;;
dump-log) class=org.apache.kafka.tools.DumpLogSegments bootstrap=no ;;
*) echo "kafka-cli: unknown tool $tool" >&2; usage ;;
esac

for arg in "$@"; do
	case "$arg" in
	--bootstrap-server | --bootstrap-server=* | --bootstrap-controller | --bootstrap-controller=*) bootstrap=no ;;
	esac
done
if [ "$bootstrap" = yes ]; then
	set -- --bootstrap-server 127.0.0.1:9092 "$@"
fi

# install-kafka.sh is idempotent; its "cached" line would mix with the tool's output.
[ -f "$kdir/VERSION" ] || echo "kafka-cli: installing Apache Kafka's jars into $kdir (first run)" >&2
if ! out="$("$root/compat-tests/scripts/install-kafka.sh" 2>&1)"; then
	printf '%s\n' "$out" >&2
	exit 1
fi

exec java -Xmx256m -Dlog4j2.configurationFile="$kdir/tools-log4j2.properties" \
	-cp "$kdir/libs/*" "$class" "$@"
