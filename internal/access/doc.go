// Package access checks a run's permissions before its first side effect
// (SelfSubjectAccessReviews) and says a refusal as a typed error that wraps the API server's:
// ForbiddenError (RBAC, with the verb and resource to grant), ErrPodSecurity and ErrAdmission,
// so that apierrors.IsForbidden, errors.Is and errors.As see through it.
package access
