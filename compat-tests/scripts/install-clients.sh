#!/usr/bin/env bash
# Installs the Java, kafkajs and Python compat-test clients into git-ignored places:
#   java    -> compat-tests/.cache/java/runner.jar   (mvn package, Maven repo in compat-tests/.cache/m2)
#   kafkajs -> compat-tests/clients/kafkajs/node_modules (npm ci from package-lock.json)
#   python  -> compat-tests/.cache/venv               (python3 -m venv + pip install -r requirements.txt)
# Idempotent: each step records a hash of its inputs and is skipped while they are unchanged.
# Usage: compat-tests/scripts/install-clients.sh [java] [kafkajs] [python]   (default: all three)
set -euo pipefail

ct="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$ct/.cache"
mkdir -p "$cache"

# hash_of EXTRA FILE...: sha256 of a string (tool versions) and the files' contents.
hash_of() { local extra="$1"; shift; { echo "$extra"; cat "$@"; } | sha256sum | cut -c1-64; }
log() { echo "install-clients: $*" >&2; }

# step NAME STAMPFILE HASH CMD...: runs CMD unless STAMPFILE holds HASH, then writes HASH.
step() {
	local name="$1" stamp="$2" want="$3"; shift 3
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		log "$name: up to date"
		return 0
	fi
	local t0=$SECONDS
	rm -f "$stamp"
	"$@"
	echo "$want" >"$stamp"
	log "$name: installed in $((SECONDS - t0)) s"
}

install_java() {
	local dir="$ct/clients/java"
	mvn -q -B -Dmaven.repo.local="$cache/m2" -f "$dir/pom.xml" package >&2
	cp "$cache/java/target/runner-jar-with-dependencies.jar" "$cache/java/runner.jar.tmp"
	mv "$cache/java/runner.jar.tmp" "$cache/java/runner.jar"
}

install_kafkajs() {
	local dir="$ct/clients/kafkajs"
	# No dependency needs an install script (codecs are pure JS / wasm).
	(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
}

install_python() {
	local venv="$cache/venv"
	[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
	"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$ct/clients/python/requirements.txt" >&2
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(java kafkajs python)
for w in "${want[@]}"; do
	case "$w" in
	java)
		mkdir -p "$cache/java"
		h=$(hash_of "$(java -version 2>&1 | head -1)" "$ct/clients/java/pom.xml" $(find "$ct/clients/java/src" -type f | sort))
		[ -f "$cache/java/runner.jar" ] || rm -f "$cache/java/.stamp"
		step java "$cache/java/.stamp" "$h" install_java
		;;
	kafkajs)
		h=$(hash_of "$(node --version)" "$ct/clients/kafkajs/package.json" "$ct/clients/kafkajs/package-lock.json")
		step kafkajs "$ct/clients/kafkajs/node_modules/.strata-stamp" "$h" install_kafkajs
		;;
	python)
		h=$(hash_of "$(python3 --version)" "$ct/clients/python/requirements.txt")
		step python "$cache/venv/.strata-stamp" "$h" install_python
		;;
	*) echo "install-clients: unknown client set '$w' (java, kafkajs, python)" >&2; exit 2 ;;
	esac
done
