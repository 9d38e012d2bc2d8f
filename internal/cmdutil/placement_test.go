package cmdutil

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
)

// --toleration takes the taint as kubectl taint writes it and tolerates exactly that taint.
func TestParseToleration(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want corev1.Toleration
		err  string
	}{
		{"dedicated=netbench:NoSchedule", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "netbench", Effect: corev1.TaintEffectNoSchedule}, ""},
		{"example.com/spot:NoExecute", corev1.Toleration{Key: "example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, ""},
		{"gpu", corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}, ""},
		{"gpu=", corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual}, ""},
		{"", corev1.Toleration{}, `key ""`},
		{"=x:NoSchedule", corev1.Toleration{}, `key ""`},
		{"bad key!:NoSchedule", corev1.Toleration{}, `key "bad key!"`},
		{"k=v v:NoSchedule", corev1.Toleration{}, `value "v v"`},
		{"k=v:NoScheduled", corev1.Toleration{}, `effect "NoScheduled": want NoSchedule, PreferNoSchedule or NoExecute`},
		{"k:", corev1.Toleration{}, `effect ""`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseToleration(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("toleration (-want +got):\n%s", d)
			}
			taint := corev1.Taint{Key: tc.want.Key, Value: tc.want.Value, Effect: tc.want.Effect}
			if taint.Effect == "" {
				taint.Effect = corev1.TaintEffectNoSchedule
			}
			if !got.ToleratesTaint(klog.Background(), &taint, true) {
				t.Errorf("%+v does not tolerate the taint it was written from, %+v", got, taint)
			}
		})
	}
}

// Each bad flag value is one line naming the flag; a Secret named twice is passed once.
func TestAgentPlacementParse(t *testing.T) {
	p := AgentPlacement{TolerationSpecs: []string{"a:NoSchedule", "b=c:NoExecute"}, PullSecretNames: []string{"regcred", "regcred", "other"}}
	if err := p.Parse(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]corev1.LocalObjectReference{{Name: "regcred"}, {Name: "other"}}, p.PullSecrets); d != "" || len(p.Tolerations) != 2 {
		t.Errorf("pull secrets (-want +got):\n%s; tolerations %v", d, p.Tolerations)
	}
	for _, bad := range []AgentPlacement{{TolerationSpecs: []string{"a:Never"}}, {PullSecretNames: []string{"Reg_Cred"}}} {
		err := bad.Parse()
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "--") {
			t.Errorf("%+v: error %v, want one line naming the flag", bad, err)
		}
	}
}

// A missing pull Secret stops the run before anything is created, naming the flag, the Secret
// and the namespace; a user who may not read Secrets is not stopped.
func TestCheckPullSecrets(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"}, Type: corev1.SecretTypeDockerConfigJson}
	p := AgentPlacement{PullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}
	o := &CommonOptions{Client: fake.NewClientset(secret)}
	if err := p.CheckPullSecrets(context.Background(), o, "shop", "shop"); err != nil {
		t.Fatal(err)
	}
	err := p.CheckPullSecrets(context.Background(), o, "shop", "web")
	if !errors.Is(err, ErrNoPullSecret) || !strings.Contains(err.Error(), "--image-pull-secret regcred") || !strings.Contains(err.Error(), "namespace web") {
		t.Errorf("error %v: want the missing Secret named with its namespace", err)
	}
	cs := fake.NewClientset()
	cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "regcred", errors.New("RBAC"))
	})
	if err := p.CheckPullSecrets(context.Background(), &CommonOptions{Client: cs}, "web"); err != nil {
		t.Errorf("forbidden to read Secrets: %v, want no error", err)
	}
}
