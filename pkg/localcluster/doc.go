// Package localcluster starts, inspects and stops local Kubernetes control
// planes for development, tests and benchmarks, fully offline.
//
// Each cluster is etcd + kube-apiserver + kube-controller-manager +
// kube-scheduler + kwok (fake nodes and pod lifecycles), run by kwokctl's
// "binary" runtime from binaries built from upstream sources into bin/k8s
// (`make k8s-binaries`). Nothing is downloaded: every binary kwokctl could ask
// for is given as a local path.
//
// The first cluster is the hub, named "local"; the others are "member-1",
// "member-2", …. Everything lives under one state directory ($OAMFLOW_HOME,
// default ~/.oamflow):
//
//	state.json                      clusters this state directory manages
//	clusters/<name>/kubeconfig.yaml self-contained kubeconfig (context <prefix><name>)
//	clusters/<name>/kwokctl.yaml    the kwokctl configuration the cluster was created with
//	kwok/                           KWOK_WORKDIR: kwokctl's own files
//	kwok/clusters/<prefix><name>/   per cluster: pids/, logs/<component>.log, pki/, etcd data
//	kwok/logs/kwokctl-<prefix><name>.log  output of the kwokctl commands run for a cluster
//
// All components listen on 127.0.0.1 only, on free ports picked at start.
package localcluster
