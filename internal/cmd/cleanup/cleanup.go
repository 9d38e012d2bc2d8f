package cleanup

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// CleanupOptions holds `kubectl netbench cleanup`.
type CleanupOptions struct {
	cmdutil.CommonOptions
	AllNamespaces bool
	DryRun        bool
}

func NewCleanupCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CleanupOptions{CommonOptions: cmdutil.NewCommonOptions(flags, streams)}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete every temporary agent pod, DaemonSet, Service and NetworkPolicy netbench left (a run killed before its own cleanup)",
		Long: `Delete the temporary agent pods, matrix DaemonSets, Services and NetworkPolicies (label app.kubernetes.io/managed-by=kubectl-netbench)
in the namespace, or in every namespace with -A, and list the netbench ephemeral containers still
running (they cannot be removed from a pod; each ends by its own deadline).`,
		Example: `  kubectl netbench cleanup -n shop
  kubectl netbench cleanup -A --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.CompleteFlags(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "every namespace")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "only list what would be deleted")
	return cmd
}

// Run deletes the agent pods and reports the running ephemeral agents.
func (o *CleanupOptions) Run(ctx context.Context) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	pods, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cmdutil.ManagedSelector})
	if err != nil {
		return fmt.Errorf("listing agent pods: %w", access.ForbiddenOr(err))
	}
	verb := "deleted"
	if o.DryRun {
		verb = "would delete"
	}
	var grace int64
	for _, p := range pods.Items {
		if !o.DryRun {
			if err := o.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
				return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, access.ForbiddenOr(err))
			}
		}
		fmt.Fprintf(o.Out, "%s pod %s/%s (%s, %s old)\n", verb, p.Namespace, p.Name, p.Status.Phase, cmdutil.Age(p.CreationTimestamp.Time))
	}
	all, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", access.ForbiddenOr(err))
	}
	running := 0
	for _, p := range all.Items {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if strings.HasPrefix(s.Name, "netbench-") && s.State.Terminated == nil {
				running++
				fmt.Fprintf(o.Out, "running ephemeral agent %s in pod %s/%s (ends by its own deadline)\n", s.Name, p.Namespace, p.Name)
			}
		}
	}
	fmt.Fprintf(o.Out, "%d agent pods %s, %d ephemeral agents running\n", len(pods.Items), verb, running)
	if err := o.cleanDaemonSets(ctx, ns, verb); err != nil {
		return err
	}
	if err := o.cleanServices(ctx, ns, verb); err != nil {
		return err
	}
	return o.cleanPolicies(ctx, ns, verb)
}

// cleanDaemonSets deletes every DaemonSet of matrix agents netbench created (their pods go with
// them); with --dry-run, lists them.
func (o *CleanupOptions) cleanDaemonSets(ctx context.Context, ns, verb string) error {
	list, err := o.Client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{LabelSelector: cmdutil.ManagedSelector})
	if err != nil {
		return fmt.Errorf("listing agent DaemonSets: %w", access.ForbiddenOr(err))
	}
	bg := metav1.DeletePropagationBackground
	for _, ds := range list.Items {
		if !o.DryRun {
			if err := o.Client.AppsV1().DaemonSets(ds.Namespace).Delete(ctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
				return fmt.Errorf("deleting DaemonSet %s/%s: %w", ds.Namespace, ds.Name, access.ForbiddenOr(err))
			}
		}
		fmt.Fprintf(o.Out, "%s DaemonSet %s/%s and its agent pods (%s old)\n", verb, ds.Namespace, ds.Name, cmdutil.Age(ds.CreationTimestamp.Time))
	}
	return nil
}

// cleanServices deletes every temporary Service netbench created (with --dry-run, lists them).
func (o *CleanupOptions) cleanServices(ctx context.Context, ns, verb string) error {
	svcs, err := o.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: cmdutil.ManagedSelector})
	if err != nil {
		return fmt.Errorf("listing temporary Services: %w", access.ForbiddenOr(err))
	}
	for _, svc := range svcs.Items {
		if !o.DryRun {
			if err := o.Client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting Service %s/%s: %w", svc.Namespace, svc.Name, access.ForbiddenOr(err))
			}
		}
		fmt.Fprintf(o.Out, "%s Service %s/%s (%s old)\n", verb, svc.Namespace, svc.Name, cmdutil.Age(svc.CreationTimestamp.Time))
	}
	return nil
}

// cleanPolicies deletes every temporary NetworkPolicy --allow-policy created (with --dry-run,
// lists them).
func (o *CleanupOptions) cleanPolicies(ctx context.Context, ns, verb string) error {
	nps, err := o.Client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: cmdutil.ManagedSelector})
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(o.Out, "NetworkPolicies not checked: you may not list them (only --allow-policy creates any)\n")
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing temporary NetworkPolicies: %w", err)
	}
	for _, np := range nps.Items {
		if !o.DryRun {
			if err := o.Client.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting NetworkPolicy %s/%s: %w", np.Namespace, np.Name, access.ForbiddenOr(err))
			}
		}
		fmt.Fprintf(o.Out, "%s NetworkPolicy %s/%s (%s old)\n", verb, np.Namespace, np.Name, cmdutil.Age(np.CreationTimestamp.Time))
	}
	return nil
}
