#!/usr/bin/env bash
# Installs the Debian packages a make target needs, only when a command is
# missing. Usage: scripts/deps.sh COMMAND=PACKAGE ...
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%=*}
  pkg=${pair#*=}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
