// kube is a multi-call binary of Kubernetes' own components, built from the k8s.io/kubernetes
// and etcd Go modules (the way hyperkube was): `kube etcd|apiserver|controller-manager|scheduler|
// kubelet|proxy [flags]`, plus `kube pki <dir>` to make the test cluster's certificates. One binary
// links the shared code once and builds much faster than five.
package main

import (
	"context"
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones, as the real apiserver has them

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube etcd|apiserver|controller-manager|scheduler|kubelet|proxy|pki [args]")
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	switch name {
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, args...))
		return
	case "pki":
		if err := makePKI(args); err != nil {
			fmt.Fprintln(os.Stderr, "pki:", err)
			os.Exit(1)
		}
		return
	}
	// Each component parses os.Args[1:] through cobra: drop the component's name.
	os.Args = append([]string{"kube-" + name}, args...)
	switch name {
	case "apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	case "proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n", name)
		os.Exit(2)
	}
}
