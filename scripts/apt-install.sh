#!/usr/bin/env bash
# Usage: apt-install.sh COMMAND PACKAGE
# Installs Debian's PACKAGE when COMMAND is not on the PATH. Idempotent; uses
# apt-get, through sudo when not root.
set -euo pipefail

cmd=$1 pkg=$2
if command -v "$cmd" >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "apt-install: $cmd is missing and apt-get is not available; install $pkg by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "apt-install: $cmd is missing; need root or sudo to install $pkg" >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "$pkg"
command -v "$cmd" >/dev/null
