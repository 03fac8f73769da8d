#!/usr/bin/env bash
# Build the real peers that the e2e tests run besides the Kubernetes ones
# (scripts/kube-bins.sh): today ExternalDNS, from the nested module
# e2e/peerbins/externaldns (the webhook client of e2e/externaldns_test.go),
# into a cache dir outside the repo:
#
#   ${MERIDIAN_PEER_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-peer-bins}/<key>/
#
# where <key> is a short sha256 of the module's go.mod, go.sum, its stubs
# and this script. The build is skipped when the binary is already there;
# otherwise it is built into a temp dir that is then renamed into place, so
# a dir that exists is complete. Logs go to stderr; the last line on stdout
# is the dir.
#
# ExternalDNS v0.23.0 needs Go >= 1.27: the module's toolchain line names
# the Go release to build with, fetched through the module proxy once
# (GOTOOLCHAIN is set here, since machines set it to local).
set -euo pipefail

GO=${GO:-go}
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$self")/.." && pwd)
mod=$root/e2e/peerbins/externaldns
base=${MERIDIAN_PEER_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-peer-bins}
key=$( (cat "$mod/go.mod" "$mod/go.sum" "$self"; cd "$mod" && find stubs -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -c1-16)
dir=$base/$key

log() { echo "peer-bins: $*" >&2; }

complete() { [ -x "$1/external-dns" ]; }

if complete "$dir"; then
	log "cached in $dir"
	echo "$dir"
	exit 0
fi

mkdir -p "$base"
tmp=$(mktemp -d "$base/.build-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cd "$mod"
toolchain=$(sed -n 's/^toolchain //p' go.mod) # go1.27.4
export GOTOOLCHAIN=$toolchain
ever=$("$GO" list -m -f '{{.Version}}' sigs.k8s.io/external-dns) # v0.23.0
log "building external-dns $ever with $toolchain into $dir (a cold build takes several minutes)"
start=$SECONDS
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$ever" \
	-o "$tmp/external-dns" sigs.k8s.io/external-dns
log "external-dns built in $((SECONDS - start))s"
complete "$tmp" || { log "build produced no binary in $tmp"; exit 1; }
chmod 755 "$tmp" # mktemp made it 0700

# A partial dir cannot come from here (rename is atomic), but clear one left by
# hand; if a concurrent run renamed its dir first, use that one.
if ! complete "$dir"; then
	rm -rf "$dir"
	mv -T "$tmp" "$dir" 2>/dev/null || complete "$dir" || { log "cannot move $tmp to $dir"; exit 1; }
fi
"$dir/external-dns" --version >&2
echo "$dir"
