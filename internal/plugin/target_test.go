package plugin

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A refusal keeps the API server's error in its chain, under the actionable line.
func TestForbiddenKeepsTheAPIError(t *testing.T) {
	api := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no"))
	err := fmt.Errorf("listing: %w", access.Forbidden(api))
	var fe *access.ForbiddenError
	var st *apierrors.StatusError
	if !apierrors.IsForbidden(err) || !errors.As(err, &fe) || !errors.As(err, &st) || st != api {
		t.Fatalf("%v: want the StatusError and the ForbiddenError in the chain", err)
	}
	if want := `listing: pods "web" is forbidden: no (grant it with the Role in the README, section RBAC)`; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}
