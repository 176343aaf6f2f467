#!/usr/bin/env bash
# Installs Kafka Streams (org.apache.kafka:kafka-streams, with RocksDB and a log4j2
# backend) from Maven Central into compat-tests/.cache/streams-$KAFKA_VERSION/libs, and
# compiles the word count application of chaos/testdata/streams against it into
# .../classes. Idempotent: the jars are resolved once per version, the application compiled
# again only when its source changed.
set -euo pipefail
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
LOG4J_VERSION="${LOG4J_VERSION:-2.25.5}"
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="$here/.cache"
dir="$cache/streams-$KAFKA_VERSION"
libs="$dir/libs"
src="$here/../chaos/testdata/streams/WordCount.java"
want="kafka-streams $KAFKA_VERSION log4j $LOG4J_VERSION"
marker="$dir/installed"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ] && ls "$libs"/kafka-streams-*.jar >/dev/null 2>&1; then
	echo "install-streams: cached $want in $libs"
else
	command -v mvn >/dev/null || { echo "install-streams: mvn is required" >&2; exit 1; }
	mkdir -p "$dir" "$cache/m2"
	rm -rf "$libs.tmp"
	cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.strata.compat</groupId>
  <artifactId>streams-reference</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
	echo "install-streams: resolving kafka-streams:$KAFKA_VERSION (Maven repo $cache/m2)"
	mvn -q -B -f "$dir/pom.xml" -Dmaven.repo.local="$cache/m2" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs.tmp"
	rm -rf "$libs"
	mv "$libs.tmp" "$libs"
	echo "$want" >"$marker"
	echo "install-streams: installed $(ls "$libs" | wc -l) jars into $libs"
fi
sum="$(sha256sum "$src" | cut -d' ' -f1)"
if [ "$(cat "$dir/classes.sum" 2>/dev/null || true)" != "$sum" ]; then
	rm -rf "$dir/classes"
	mkdir -p "$dir/classes"
	javac -d "$dir/classes" -cp "$libs/*" "$src"
	echo "$sum" >"$dir/classes.sum"
	echo "install-streams: compiled $(basename "$src")"
fi
