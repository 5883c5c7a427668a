package webhook

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/tenancy"
)

// IdentityChecker refuses an Application whose app.oam.dev/service-account-name
// annotation names a ServiceAccount the user writing it may not act as:
// the controller would act as that ServiceAccount for the Application, so
// the writer must be allowed to impersonate it (verb impersonate on
// serviceaccounts/<name> in the Application's namespace), asked with a
// SubjectAccessReview. Annotations that name no ServiceAccount are refused
// with the controller's message in every mode. In lockdown it also refuses
// an Application whose spec names targets outside its scope (checkScope).
type IdentityChecker struct {
	// Tenancy is the controller's configuration; the writer is checked in
	// lockdown only (in single-tenant mode writers of Applications may act as
	// the controller anyway).
	Tenancy tenancy.Config
	// Reviews creates SubjectAccessReviews (the controller's client).
	Reviews client.Client
}

// Check returns why app may not be admitted as written by user ("" when
// it may), or the error that kept it from finding out; old is the
// Application before an update (nil on create). An update that changes
// neither the identity nor the spec (labels, finalizers) is not checked
// again; one that changes the spec is, since it changes what the identity
// does.
func (c *IdentityChecker) Check(ctx context.Context, user authenticationv1.UserInfo, old, app *v1beta1.Application) (string, error) {
	id, err := c.Tenancy.IdentityOf(app)
	if err != nil {
		return err.Error(), nil
	}
	if !c.Tenancy.Lockdown() || id.Source != tenancy.FromAnnotation {
		return "", nil
	}
	if old != nil && old.Annotations[v1beta1.AnnoServiceAccountName] == app.Annotations[v1beta1.AnnoServiceAccountName] &&
		equality.Semantic.DeepEqual(old.Spec, app.Spec) {
		return "", nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: id.Namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: id.Name,
		},
	}}
	if err := c.Reviews.Create(ctx, sar); err != nil {
		return "", fmt.Errorf("asking whether %s may act as %s: %w", user.Username, id, err)
	}
	if sar.Status.Allowed {
		return "", nil
	}
	return fmt.Sprintf("application %s/%s: metadata.annotations[%s]: user %q may not act as %s: the Application would act as it, which needs the verb impersonate on serviceaccounts/%s in namespace %s",
		app.Namespace, app.Name, v1beta1.AnnoServiceAccountName, user.Username, id, id.Name, id.Namespace), nil
}

// maxAccessReviews bounds the SubjectAccessReviews one admission makes.
const maxAccessReviews = 20

// accessWarnings asks, in lockdown, whether the Application's identity may
// write each object its spec has it write on the hub (create and patch:
// server-side apply needs both) and returns a warning, in the words the
// controller's step failure will use, for each it may not. They are
// warnings, not refusals: the RoleBinding that allows the writes is often
// applied together with the Application (one GitOps sync), and the
// controller refuses at run time anyway.
func (c *IdentityChecker) accessWarnings(ctx context.Context, app *v1beta1.Application) []string {
	s := c.scope(app)
	if s == nil || c.Reviews == nil {
		return nil
	}
	id := s.tenant.Identity
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + id.Namespace, "system:authenticated"}
	var warnings []string
	seen := map[write]bool{}
	reviews := 0
	for _, w := range s.writes {
		key := write{resource: w.resource, namespace: w.namespace}
		if seen[key] {
			continue
		}
		seen[key] = true
		for _, verb := range []string{"create", "patch"} {
			if reviews == maxAccessReviews {
				return warnings
			}
			reviews++
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: id.UserName(), Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: w.namespace, Verb: verb,
					Group: w.resource.Group, Version: w.resource.Version, Resource: w.resource.Resource,
				},
			}}
			if err := c.Reviews.Create(ctx, sar); err != nil {
				return append(warnings, fmt.Sprintf("not checked whether %s may write what the Application deploys: %v", id, err))
			}
			if sar.Status.Allowed {
				continue
			}
			resource := w.resource.Resource
			if w.resource.Group != "" {
				resource += "." + w.resource.Group
			}
			denied := &tenancy.DeniedError{Identity: id, Verb: verb, Resource: resource, Namespace: w.namespace}
			warnings = append(warnings, fmt.Sprintf("%s: %s: the workflow will fail there until a RoleBinding allows it", w.field, denied))
			break
		}
	}
	return warnings
}
