package session

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// An interrupt that lands while a create is in flight: the API server made the object, the
// answer never came. Close still deletes it.
func TestCloseDeletesWhatAnInterruptedCreateMade(t *testing.T) {
	cases := []struct {
		resource string
		create   func(ctx context.Context, s *Session) error
		left     func(cs *fake.Clientset) (int, error)
	}{
		{"services", func(ctx context.Context, s *Session) error {
			_, err := s.CreateService(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "netbench-run1"}}, time.Minute)
			return err
		}, func(cs *fake.Clientset) (int, error) {
			l, err := cs.CoreV1().Services("shop").List(context.Background(), metav1.ListOptions{})
			return len(l.Items), err
		}},
		{"networkpolicies", func(ctx context.Context, s *Session) error {
			return s.CreatePolicy(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "netbench-run1-server"}}, time.Minute)
		}, func(cs *fake.Clientset) (int, error) {
			l, err := cs.NetworkingV1().NetworkPolicies("shop").List(context.Background(), metav1.ListOptions{})
			return len(l.Items), err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.resource, func(t *testing.T) {
			cs := fake.NewClientset()
			ctx, interrupt := context.WithCancel(context.Background())
			cs.PrependReactor("create", tc.resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
				obj := a.(k8stesting.CreateAction).GetObject()
				if err := cs.Tracker().Create(a.GetResource(), obj, a.GetNamespace()); err != nil {
					t.Fatal(err)
				}
				interrupt() // the answer is lost to the interrupt
				return true, nil, context.Canceled
			})
			s := NewSession(cs, "run1", "token", "img", ModeEphemeral, time.Second)
			if err := tc.create(ctx, s); err == nil {
				t.Fatal("the interrupted create succeeded")
			}
			if n, err := tc.left(cs); err != nil || n != 1 {
				t.Fatalf("before Close: %d (%v), want the object the server made", n, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n, err := tc.left(cs); err != nil || n != 0 {
				t.Errorf("after Close: %d left (%v)", n, err)
			}
		})
	}
}
