#!/usr/bin/env bash
# Builds kube-apiserver, kubectl, etcd and kube-controller-manager from Go modules into a versioned cache outside the repo,
# and the real node's kubelet, kube-scheduler and kube-proxy (they reuse kube-apiserver's compiled packages).
# Rebuilds only on a miss: a second run costs nothing. Prints the cache directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s_version="$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/k8s/go.mod")"
cache="${AIANALYSIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/k8s-$k8s_version}"
mkdir -p "$cache"
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
vpkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${vpkgs[@]}"; do
  ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
build() {  # name package
  local out="$cache/$1"
  if [ -x "$out" ]; then return 0; fi
  echo "building $1 ($2) into $cache" >&2
  local start=$SECONDS
  (cd "$here/k8s" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off -ldflags "$ldflags" -o "$out.tmp" "$2")
  mv "$out.tmp" "$out"
  echo "built $1 in $((SECONDS - start))s" >&2
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
# The Job controller (and garbage collector) for the executor's tests and the demo; devcluster starts
# it only when asked.
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
# The dev cluster's real node (devcluster.NodeCluster): kubelet builds without cgo.
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kubelet k8s.io/kubernetes/cmd/kubelet
build kube-proxy k8s.io/kubernetes/cmd/kube-proxy
echo "$cache"
