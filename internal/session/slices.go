package session

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
)

// CreateEndpointSlice creates the endpoints of svc, a temporary Service without a selector as
// CreateService returned it: labelled as the run's objects, and owned by svc, so that the
// garbage collector deletes it with the Service whatever becomes of the run (a later run or
// `kubectl netbench cleanup` deletes a Service left behind); Close deletes it first.
func (s *Session) CreateEndpointSlice(ctx context.Context, svc *corev1.Service, slice *discoveryv1.EndpointSlice) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.creating.Done()
	slice.Namespace = svc.Namespace
	slice.Labels = s.Labels(RoleEndpoint)
	slice.Labels[discoveryv1.LabelServiceName] = svc.Name
	slice.Labels[discoveryv1.LabelManagedBy] = "kubectl-netbench"
	ctl := true
	slice.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &ctl}}
	created, err := s.Client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{DryRun: s.dryRunAll()})
	if err == nil && s.DryRun {
		s.plan(VerbCreate, "the endpoints of the temporary Service", created)
		return nil
	}
	if mayExist(ctx, err) || err == nil {
		s.mu.Lock()
		s.slices = append(s.slices, slice)
		s.mu.Unlock()
	}
	if err != nil {
		return access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("creating the endpoints of the temporary Service %s/%s", svc.Namespace, svc.Name),
			Need: access.Permission{Verb: "create", Resource: "endpointslices", Group: "discovery.k8s.io"}, Namespace: svc.Namespace})
	}
	return nil
}

// deleteSlices deletes the endpoint slices the run created (one not found is gone already).
func (s *Session) deleteSlices(ctx context.Context, slices []*discoveryv1.EndpointSlice) []error {
	var errs []error
	for _, es := range slices {
		err := s.Client.DiscoveryV1().EndpointSlices(es.Namespace).Delete(ctx, es.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the temporary EndpointSlice %s/%s (it goes with its Service; or: kubectl delete endpointslice -n %s %s): %w",
				es.Namespace, es.Name, es.Namespace, es.Name, err))
		}
	}
	return errs
}
