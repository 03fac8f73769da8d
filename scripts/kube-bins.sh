#!/usr/bin/env bash
# Build the real kube-apiserver and etcd that the e2e tests run (e2e/kubelab)
# from the nested module e2e/kubebins, into a cache dir outside the repo:
#
#   ${MERIDIAN_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-bins}/<key>/
#
# where <key> is a short sha256 of e2e/kubebins/go.mod, go.sum and this script.
# The build is skipped when both binaries are already there; otherwise they are
# built into a temp dir that is then renamed into place, so a dir that exists is
# complete. Logs go to stderr; the last line on stdout is the dir.
set -euo pipefail

GO=${GO:-go}
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$self")/.." && pwd)
mod=$root/e2e/kubebins
base=${MERIDIAN_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-bins}
key=$(cat "$mod/go.mod" "$mod/go.sum" "$self" | sha256sum | cut -c1-16)
dir=$base/$key

log() { echo "kube-bins: $*" >&2; }

complete() { [ -x "$1/kube-apiserver" ] && [ -x "$1/etcd" ]; }

if complete "$dir"; then
	log "cached in $dir"
	echo "$dir"
	exit 0
fi

mkdir -p "$base"
tmp=$(mktemp -d "$base/.build-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cd "$mod"
kver=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes) # v1.37.2
major=${kver#v}; major=${major%%.*}
minor=${kver#v*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$kver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
log "building kube-apiserver $kver and etcd into $dir (a cold build takes several minutes)"
start=$SECONDS
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver ./etcd
log "built in $((SECONDS - start))s"
complete "$tmp" || { log "build produced no binaries in $tmp"; exit 1; }
chmod 755 "$tmp" # mktemp made it 0700

# A partial dir cannot come from here (rename is atomic), but clear one left by
# hand; if a concurrent run renamed its dir first, use that one.
if ! complete "$dir"; then
	rm -rf "$dir"
	mv -T "$tmp" "$dir" 2>/dev/null || complete "$dir" || { log "cannot move $tmp to $dir"; exit 1; }
fi
"$dir/kube-apiserver" --version >&2
# sed, not head: head exits after one line and etcd, still writing, would
# die of SIGPIPE, which pipefail turns into this script's failure.
"$dir/etcd" --version | sed -n 1p >&2
echo "$dir"
