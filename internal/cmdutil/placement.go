package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// AgentPlacement holds the flags that let temporary agents run where a locked-down cluster
// wants them: tolerations for tainted nodes the command chooses, and pull secrets for a private
// registry. Ephemeral containers take neither: they run in their pod, on its node, and pull
// with the pod's own imagePullSecrets.
type AgentPlacement struct {
	TolerationSpecs []string
	PullSecretNames []string

	// Filled by Parse.
	Tolerations []corev1.Toleration
	PullSecrets []corev1.LocalObjectReference
}

// AddTolerationFlag adds --toleration, for the commands that choose the nodes of temporary
// agents (who: which agents).
func (p *AgentPlacement) AddTolerationFlag(cmd *cobra.Command, who string) {
	cmd.Flags().StringArrayVar(&p.TolerationSpecs, "toleration", nil, "let "+who+" run on nodes with this taint, as kubectl taint writes it: KEY[=VALUE][:EFFECT] (no value: any value; no effect: every effect); repeatable")
}

// AddPullSecretFlag adds --image-pull-secret, for the commands that start temporary agent pods.
func (p *AgentPlacement) AddPullSecretFlag(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&p.PullSecretNames, "image-pull-secret", nil, "pull the agent image of temporary agent pods with this Secret of their namespace (kubernetes.io/dockerconfigjson); repeatable. Ephemeral agents pull with their pod's own imagePullSecrets")
}

// Parse checks the flags: every message names the flag and the bad value.
func (p *AgentPlacement) Parse() error {
	p.Tolerations, p.PullSecrets = nil, nil
	for _, spec := range p.TolerationSpecs {
		t, err := ParseToleration(spec)
		if err != nil {
			return fmt.Errorf("--toleration %q: %w", spec, err)
		}
		p.Tolerations = append(p.Tolerations, t)
	}
	for _, name := range p.PullSecretNames {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("--image-pull-secret %q: not a Secret name: %s", name, strings.Join(errs, "; "))
		}
		if !slices.Contains(p.PullSecrets, corev1.LocalObjectReference{Name: name}) {
			p.PullSecrets = append(p.PullSecrets, corev1.LocalObjectReference{Name: name})
		}
	}
	return nil
}

var effects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// ParseToleration reads KEY[=VALUE][:EFFECT], the form kubectl taint gives a taint: the
// toleration of that taint (without a value, of the key with any value; without an effect,
// of every effect).
func ParseToleration(spec string) (corev1.Toleration, error) {
	rest, effect, hasEffect := strings.Cut(spec, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return t, fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
	}
	if hasValue {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return t, fmt.Errorf("value %q: %s", value, strings.Join(errs, "; "))
		}
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		t.Effect = corev1.TaintEffect(effect)
		if !slices.Contains(effects, t.Effect) {
			return t, fmt.Errorf("effect %q: want NoSchedule, PreferNoSchedule or NoExecute", effect)
		}
	}
	return t, nil
}

// ErrNoPullSecret means an --image-pull-secret names no Secret of a namespace the run uses.
var ErrNoPullSecret = errors.New("no such Secret")

// CheckPullSecrets checks, before anything is created, that every --image-pull-secret is a
// Secret of each namespace where temporary agents start. A user who may not read Secrets is
// not stopped: the kubelet then says whether it found them.
func (p *AgentPlacement) CheckPullSecrets(ctx context.Context, o *CommonOptions, namespaces ...string) error {
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		for _, ref := range p.PullSecrets {
			err := secretExists(ctx, o.Client, ns, ref.Name)
			switch {
			case apierrors.IsNotFound(err):
				return fmt.Errorf("--image-pull-secret %s: %w in namespace %s (temporary agents start there; create it with kubectl create secret docker-registry -n %s %s …)", ref.Name, ErrNoPullSecret, ns, ns, ref.Name)
			case apierrors.IsForbidden(err):
				klog.V(2).Infof("--image-pull-secret %s: may not read Secrets in %s; the kubelet will say if it is missing", ref.Name, ns)
			case err != nil:
				return fmt.Errorf("--image-pull-secret %s in namespace %s: %w", ref.Name, ns, err)
			}
		}
	}
	return nil
}

// secretExists reads only the Secret's metadata (the API server's PartialObjectMetadata), so
// that its credentials never reach the plugin, nor its -v 8 request log. A fake clientset,
// which has no REST client, is asked for the Secret itself.
func secretExists(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		_, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}
	return rc.Get().Namespace(ns).Resource("secrets").Name(name).
		SetHeader("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").
		Do(ctx).Error()
}
