package session

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
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
		{"pods", func(ctx context.Context, s *Session) error {
			_, err := s.Start(ctx, testClient())
			return err
		}, func(cs *fake.Clientset) (int, error) {
			l, err := cs.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
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

// testClient is a temporary client agent's spec on node n1 of namespace shop.
func testClient() AgentSpec {
	target := &Target{Namespace: "shop", Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Spec: corev1.PodSpec{NodeName: "n1"}}}
	return AgentSpec{Role: RoleClient, Target: target, Lifetime: time.Minute, Placement: &Placement{Node: "n1"}, Job: &agent.Job{}}
}

// Close that begins while a create is in flight (another goroutine's, whose context is not
// the interrupted one) waits for it and deletes what it made; a create after Close begins is
// refused.
func TestCloseWaitsForACreateInFlight(t *testing.T) {
	cs := fake.NewClientset()
	inFlight, release := make(chan struct{}), make(chan struct{})
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		close(inFlight)
		<-release
		return false, nil, nil // the tracker makes the pod
	})
	s := NewSession(cs, "run1", "token", "img", ModePod, time.Second)
	started := make(chan error)
	go func() {
		_, err := s.Start(context.Background(), testClient())
		started <- err
	}()
	<-inFlight
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	for begun := false; !begun; time.Sleep(time.Millisecond) { // Close has begun and waits
		s.mu.Lock()
		begun = s.closed
		s.mu.Unlock()
	}
	if _, err := s.CreateService(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "late"}}, time.Minute); !errors.Is(err, ErrClosed) {
		t.Errorf("a create after Close began: %v, want ErrClosed", err)
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if l, err := cs.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("after Close: %d pods left (%v)", len(l.Items), err)
	}
}
