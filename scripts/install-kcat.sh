#!/usr/bin/env bash
# Installs kcat (the Kafka command-line client the end-to-end tests drive) if it is
# missing.
exec "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" kcat kcat
