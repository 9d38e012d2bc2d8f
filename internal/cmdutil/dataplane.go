package cmdutil

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// Dataplane reads what a user may about how the cluster implements Services: kube-proxy's
// ConfigMap as kubeadm writes it (kube-system/kube-proxy, key config.conf), else the
// --proxy-mode flag of its DaemonSet; "unknown" with the reason otherwise (the nodes' rules
// and kube-proxy's /configz are not a user's to read).
func (o *CommonOptions) Dataplane(ctx context.Context) *report.Dataplane {
	cm, cmErr := o.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if cmErr == nil {
		if conf, ok := cm.Data["config.conf"]; ok {
			var c struct {
				Mode string `json:"mode"`
			}
			if err := yaml.Unmarshal([]byte(conf), &c); err == nil {
				mode := c.Mode
				if mode == "" {
					mode = "iptables" // kube-proxy's default on Linux
				}
				return &report.Dataplane{Proxy: "kube-proxy", Mode: mode, Source: "ConfigMap kube-system/kube-proxy"}
			}
		}
	}
	ds, dsErr := o.Client.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if dsErr == nil {
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				if mode, ok := strings.CutPrefix(a, "--proxy-mode="); ok {
					return &report.Dataplane{Proxy: "kube-proxy", Mode: mode, Source: "DaemonSet kube-system/kube-proxy --proxy-mode"}
				}
			}
		}
	}
	return &report.Dataplane{Mode: "unknown", Source: fmt.Sprintf("kube-system/kube-proxy: ConfigMap: %v; DaemonSet: %v", short(cmErr), short(dsErr))}
}

// short is an error's message, or "no mode in it" for none.
func short(err error) string {
	if err == nil {
		return "no mode in it"
	}
	return access.ForbiddenOr(err).Error()
}
