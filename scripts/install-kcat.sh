#!/usr/bin/env bash
# Installs kcat (the Kafka command-line client the end-to-end tests drive) if it is
# missing. Idempotent; uses apt-get, through sudo when not root.
set -euo pipefail

if command -v kcat >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-kcat: kcat is missing and apt-get is not available; install kcat by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-kcat: kcat is missing; need root or sudo to install it" >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q kcat
command -v kcat >/dev/null
