package webhook

import (
	"bytes"
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Webhook names inside the configuration (fully qualified, as the API
// requires).
const (
	ApplicationWebhookName = "applications.validate.core.oam.dev"
	DefinitionWebhookName  = "definitions.validate.core.oam.dev"
)

// DefaultConfigurationName is the name of the ValidatingWebhookConfiguration
// the chart installs and the controller registers out of a cluster.
const DefaultConfigurationName = "oamflow-webhook"

// Target says where the API server sends admission reviews: URL (the
// controller outside the cluster, e.g. "https://127.0.0.1:9443") or
// Service (the chart's Service in front of the controller Pods).
type Target struct {
	URL     string
	Service *admissionregistrationv1.ServiceReference
}

// ConfigurationOptions shape the ValidatingWebhookConfiguration.
type ConfigurationOptions struct {
	// Name of the configuration (DefaultConfigurationName).
	Name string
	// ApplicationFailurePolicy applies when the controller cannot be
	// reached for an Application (Fail refuses the write, Ignore admits
	// it). Definitions always use Ignore: the chart creates the built-in
	// definitions before the controller is up.
	ApplicationFailurePolicy admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds per review (1..30; 10 when 0).
	TimeoutSeconds int32
}

// Configuration builds the ValidatingWebhookConfiguration calling both
// handlers at target with caBundle (PEM) as the trusted CA. The chart's
// template renders the same object with a Service target.
func Configuration(o ConfigurationOptions, target Target, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	if o.Name == "" {
		o.Name = DefaultConfigurationName
	}
	if o.ApplicationFailurePolicy == "" {
		o.ApplicationFailurePolicy = admissionregistrationv1.Fail
	}
	if o.TimeoutSeconds == 0 {
		o.TimeoutSeconds = 10
	}
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	equivalent := admissionregistrationv1.Equivalent
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
		if target.Service != nil {
			svc := *target.Service
			svc.Path = &path
			cc.Service = &svc
		} else {
			u := target.URL + path
			cc.URL = &u
		}
		return cc
	}
	rule := func(resources ...string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{v1beta1.GroupVersion.Group},
				APIVersions: []string{v1beta1.GroupVersion.Version},
				Resources:   resources,
			},
		}}
	}
	timeout := o.TimeoutSeconds
	appPolicy := o.ApplicationFailurePolicy
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   o.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "oamflow", "app.kubernetes.io/component": "webhook"},
		},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{
				Name:                    ApplicationWebhookName,
				ClientConfig:            clientConfig(ApplicationPath),
				Rules:                   rule("applications"),
				FailurePolicy:           &appPolicy,
				MatchPolicy:             &equivalent,
				SideEffects:             &none,
				TimeoutSeconds:          &timeout,
				AdmissionReviewVersions: []string{"v1"},
			},
			{
				Name:                    DefinitionWebhookName,
				ClientConfig:            clientConfig(DefinitionPath),
				Rules:                   rule("componentdefinitions", "traitdefinitions", "policydefinitions", "workflowstepdefinitions"),
				FailurePolicy:           &ignore,
				MatchPolicy:             &equivalent,
				SideEffects:             &none,
				TimeoutSeconds:          &timeout,
				AdmissionReviewVersions: []string{"v1"},
			},
		},
	}
}

// Apply creates want or replaces the webhooks of the existing
// configuration of that name (taking over one the chart installed).
func Apply(ctx context.Context, c client.Client, want *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	existing := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	switch err := c.Get(ctx, client.ObjectKey{Name: want.Name}, existing); {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			return fmt.Errorf("creating ValidatingWebhookConfiguration %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", want.Name, err)
	}
	existing.Webhooks = want.Webhooks
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		existing.Labels[k] = v
	}
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating ValidatingWebhookConfiguration %s: %w", want.Name, err)
	}
	return nil
}

// PatchCABundle sets caBundle on every webhook of the named configuration
// (the chart's, whose bundle is empty until the controller fills it). It
// reports whether the configuration exists.
func PatchCABundle(ctx context.Context, c client.Client, name string, caBundle []byte) (bool, error) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, vwc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", name, err)
	}
	base := vwc.DeepCopy()
	changed := false
	for i := range vwc.Webhooks {
		if !bytes.Equal(vwc.Webhooks[i].ClientConfig.CABundle, caBundle) {
			vwc.Webhooks[i].ClientConfig.CABundle = caBundle
			changed = true
		}
	}
	if !changed {
		return true, nil
	}
	if err := c.Patch(ctx, vwc, client.MergeFrom(base)); err != nil {
		return true, fmt.Errorf("patching the caBundle of ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return true, nil
}

// DeleteIfOurs deletes the named configuration when its first webhook
// still calls url with caBundle, i.e. no other controller took it over.
func DeleteIfOurs(ctx context.Context, c client.Client, name, url string, caBundle []byte) error {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, vwc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if len(vwc.Webhooks) == 0 {
		return nil
	}
	cc := vwc.Webhooks[0].ClientConfig
	if cc.URL == nil || *cc.URL != url+ApplicationPath || !bytes.Equal(cc.CABundle, caBundle) {
		return nil
	}
	err := c.Delete(ctx, vwc, client.Preconditions{ResourceVersion: &vwc.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}
