#!/usr/bin/env bash
# Build the real kube-apiserver and etcd that the e2e tests run (e2e/kubelab),
# and the kubectl and helm CLIs of the two-site walkthrough (e2e/twosite_test.go),
# from the nested modules e2e/kubebins and e2e/kubebins/helm, into a cache dir
# outside the repo:
#
#   ${MERIDIAN_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-bins}/<key>/
#
# where <key> is a short sha256 of both modules' go.mod and go.sum and this
# script. The build is skipped when every binary is already there; otherwise they are
# built into a temp dir that is then renamed into place, so a dir that exists is
# complete. Logs go to stderr; the last line on stdout is the dir.
set -euo pipefail

GO=${GO:-go}
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$self")/.." && pwd)
mod=$root/e2e/kubebins
base=${MERIDIAN_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/meridian-bins}
key=$(cat "$mod/go.mod" "$mod/go.sum" "$mod/helm/go.mod" "$mod/helm/go.sum" "$self" | sha256sum | cut -c1-16)
dir=$base/$key

log() { echo "kube-bins: $*" >&2; }

complete() { [ -x "$1/kube-apiserver" ] && [ -x "$1/etcd" ] && [ -x "$1/kubectl" ] && [ -x "$1/helm" ]; }

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
log "building kube-apiserver $kver, kubectl, etcd and helm into $dir (a cold build takes several minutes)"
start=$SECONDS
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd
log "kube-apiserver, kubectl, etcd built in $((SECONDS - start))s"
# helm shares the Kubernetes libraries' versions (v0.37.2, see helm/go.mod),
# so most of its packages come from the build cache of the line above.
hstart=$SECONDS
hver=$(cd helm && "$GO" list -m -f '{{.Version}}' helm.sh/helm/v3)
hpkg=helm.sh/helm/v3/internal/version
(cd helm && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X $hpkg.version=$hver -X $hpkg.gitTreeState=clean" \
	-o "$tmp/helm" helm.sh/helm/v3/cmd/helm)
log "helm $hver built in $((SECONDS - hstart))s"
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
"$dir/kubectl" version --client >&2
"$dir/helm" version --short >&2
echo "$dir"
