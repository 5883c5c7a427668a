#!/usr/bin/env bash
# Builds the local control-plane binaries from upstream Go sources into bin/k8s/:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kwokctl.
# Versions are pinned by the tools modules under hack/tools/{etcd,k8s,kwok}.
# A stamp file (bin/k8s/VERSION) records the hash of those pins; when it matches
# and every binary is present the build is skipped. First build: ~10-15 min on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OAMFLOW_K8S_BIN:-$root/bin/k8s}
stamp=$out/VERSION
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl)

want=$(cat "$root"/hack/tools/{etcd,k8s,kwok}/go.mod | sha256sum | cut -c1-16)
want="pins=$want build=2 etcd=v3.6.5 kubernetes=v1.34.2 kwok=v0.8.0"

have_all=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || have_all=0; done
if [ "$have_all" = 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "bin/k8s is up to date ($want)"
  exit 0
fi

mkdir -p "$out"
rm -f "$stamp"
export CGO_ENABLED=0
step() { printf '==> %s\n' "$*"; }
step "building etcd (hack/tools/etcd)"
(cd "$root/hack/tools/etcd" && go build -trimpath -o "$out/etcd" go.etcd.io/etcd/server/v3)
step "building kwok, kwokctl (hack/tools/kwok)"
(cd "$root/hack/tools/kwok" && go build -trimpath -o "$out/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
step "building kube-apiserver, kube-controller-manager, kube-scheduler (hack/tools/k8s; the first build takes ~10 minutes)"
# Stamp the version the binaries report (/version, kubectl version) as a release build would.
ver=k8s.io/component-base/version
ldflags="-s -w -X $ver.gitVersion=v1.34.2 -X $ver.gitMajor=1 -X $ver.gitMinor=34 -X $ver.gitTreeState=clean"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=v1.34.2 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=34"
(cd "$root/hack/tools/k8s" && go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler)
echo "$want" > "$stamp"
step "done: $(ls "$out" | tr '\n' ' ')"
