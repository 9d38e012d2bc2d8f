// Command k8s is every Kubernetes component the lab runs, in one binary: it dispatches on the
// name it is called by (a symlink per component) or on its first argument.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "k8s" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	var c *cobra.Command
	switch name {
	case "kube-apiserver":
		c = apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		c = controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		c = scheduler.NewSchedulerCommand()
	case "kubelet":
		c = kubelet.NewKubeletCommand(context.Background())
	case "kube-proxy":
		c = proxy.NewProxyCommand()
	case "kubectl":
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "k8s: unknown component %q (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl)\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(c))
}
