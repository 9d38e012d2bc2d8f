package access

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ForbiddenError is an RBAC refusal said as one line naming the verb and resource to grant. It
// wraps the API server's error: apierrors.IsForbidden and errors.As see through it.
type ForbiddenError struct{ Err error }

func (e *ForbiddenError) Error() string {
	return StatusMessage(e.Err) + " (grant it with the Role in the README, section RBAC)"
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// Forbidden turns an RBAC refusal into one line naming the verb and resource to grant.
func Forbidden(err error) error { return &ForbiddenError{Err: err} }

// ForbiddenOr turns an RBAC refusal into the actionable line and leaves other errors as they are.
func ForbiddenOr(err error) error {
	if apierrors.IsForbidden(err) {
		return Forbidden(err)
	}
	return err
}

func StatusMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}
