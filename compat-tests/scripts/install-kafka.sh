#!/usr/bin/env bash
# Installs the reference broker for the compat suite, the bench, the chaos controls and the
# e2e tests' Kafka tools: Apache Kafka (kafka_2.13) and its command-line tools (kafka-tools)
# from Maven Central, with a log4j2 backend (Kafka 4.x uses slf4j-api 1.7, so the binding is
# log4j-slf4j-impl, not log4j-slf4j2-impl), into compat-tests/.cache/kafka-$KAFKA_VERSION/libs
# (KAFKA_VERSION defaults to 4.4.0, the one release the repo runs; another, e.g. 4.1.1, goes
# into its own directory beside it). Idempotent: a completed install (marked by
# .cache/kafka-$KAFKA_VERSION/VERSION) is reused. Usage: scripts/install-kafka.sh [--verify]
#   --verify  also format a KRaft combined-mode broker, start it, check it answers, stop it.
# The log4j2 backend defaults to the log4j version the release depends on (kafka-server's
# log4j-core).
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
case "$KAFKA_VERSION" in
4.4.*) LOG4J_VERSION="${LOG4J_VERSION:-2.25.5}" ;;
*) LOG4J_VERSION="${LOG4J_VERSION:-2.24.3}" ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$here/.cache"
kdir="$cache/kafka-$KAFKA_VERSION"
libs="$kdir/libs"
marker="$kdir/VERSION"
want="kafka_2.13-$KAFKA_VERSION log4j-slf4j-impl-$LOG4J_VERSION"

if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ] && ls "$libs"/kafka_2.13-*.jar >/dev/null 2>&1; then
	echo "install-kafka: cached $want in $libs"
else
	command -v mvn >/dev/null || { echo "install-kafka: mvn is required" >&2; exit 1; }
	command -v java >/dev/null || { echo "install-kafka: java (17+) is required" >&2; exit 1; }
	mkdir -p "$kdir" "$cache/m2"
	rm -rf "$libs.tmp"
	cat >"$kdir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.strata.compat</groupId>
  <artifactId>kafka-reference</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
	echo "install-kafka: resolving kafka_2.13:$KAFKA_VERSION + kafka-tools + log4j $LOG4J_VERSION (Maven repo $cache/m2)"
	mvn -q -B -f "$kdir/pom.xml" -Dmaven.repo.local="$cache/m2" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs.tmp"
	rm -rf "$libs"
	mv "$libs.tmp" "$libs"
	echo "$want" >"$marker"
	echo "install-kafka: installed $(ls "$libs" | wc -l) jars into $libs"
fi

# log4j2 config: everything to a file named by -Dkafka.logs.file, warnings to stderr.
cat >"$kdir/log4j2.properties" <<'L4J'
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.file:-kafka.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
appender.err.filter.threshold.type = ThresholdFilter
appender.err.filter.threshold.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
rootLogger.appenderRef.err.ref = STDERR
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache
logger.apache.level = info
L4J
# Tools config: quiet, warnings and errors to stderr only.
cat >"$kdir/tools-log4j2.properties" <<'L4J'
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
L4J

[ "${1:-}" = "--verify" ] || exit 0

# Verification: KRaft combined-mode broker on free ports in a temp dir, metadata answer, stop.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kport=$(free_port); cport=$(free_port)
tmp="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
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
PROPS
jopts=(-Xmx512m -Dlog4j2.configurationFile="$kdir/log4j2.properties" -Dkafka.logs.file="$tmp/kafka.log")
java "${jopts[@]}" -cp "$libs/*" kafka.tools.StorageTool format -t "$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null)" -c "$tmp/server.properties" >"$tmp/format.out" 2>&1 || { cat "$tmp/format.out" >&2; exit 1; }
java "${jopts[@]}" -cp "$libs/*" kafka.Kafka "$tmp/server.properties" >"$tmp/stdout" 2>&1 &
pid=$!
deadline=$((SECONDS + 60))
until kcat -b "127.0.0.1:$kport" -L -m 2 >/dev/null 2>&1; do
	if [ $SECONDS -gt $deadline ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "install-kafka: broker did not answer metadata" >&2; tail -30 "$tmp/kafka.log" "$tmp/stdout" >&2; exit 1
	fi
	sleep 0.5
done
kcat -b "127.0.0.1:$kport" -L -m 2 | head -3
echo "install-kafka: verified (KRaft combined mode on 127.0.0.1:$kport answered metadata)"
