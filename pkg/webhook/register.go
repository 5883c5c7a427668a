package webhook

import (
	"bytes"
	"context"
	"fmt"
	"strings"

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
	// RecorderWebhookName is the mutating webhook recording who wrote an
	// Application (Recorder).
	RecorderWebhookName = "applications.mutate.core.oam.dev"
)

// DefaultConfigurationName is the name of the ValidatingWebhookConfiguration
// and of the MutatingWebhookConfiguration the chart installs and the
// controller registers out of a cluster.
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

// MutatingConfiguration builds the MutatingWebhookConfiguration of the
// same name calling Recorder at target with caBundle: on every create and
// update of an Application, so that the record of who wrote it cannot be
// set by hand. It fails as Applications' validation does
// (ApplicationFailurePolicy).
func MutatingConfiguration(o ConfigurationOptions, target Target, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	v := Configuration(o, target, caBundle)
	app := v.Webhooks[0]
	never := admissionregistrationv1.NeverReinvocationPolicy
	path := RecorderPath
	cc := *app.ClientConfig.DeepCopy()
	if cc.Service != nil {
		cc.Service.Path = &path
	} else {
		u := target.URL + path
		cc.URL = &u
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: v.ObjectMeta,
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    RecorderWebhookName,
			ClientConfig:            cc,
			Rules:                   app.Rules,
			FailurePolicy:           app.FailurePolicy,
			MatchPolicy:             app.MatchPolicy,
			SideEffects:             app.SideEffects,
			TimeoutSeconds:          app.TimeoutSeconds,
			AdmissionReviewVersions: app.AdmissionReviewVersions,
			ReinvocationPolicy:      &never,
		}},
	}
}

// Configurations returns both configurations the webhook server needs
// (the validating one first): what Apply registers, PatchCABundle patches
// and DeleteIfOurs removes.
func Configurations(o ConfigurationOptions, target Target, caBundle []byte) []client.Object {
	return []client.Object{Configuration(o, target, caBundle), MutatingConfiguration(o, target, caBundle)}
}

// hook is one webhook of a configuration: its name and where its client
// configuration lives in the object.
type hook struct {
	name   string
	config *admissionregistrationv1.WebhookClientConfig
}

// hooksOf returns the webhooks of a Validating- or
// MutatingWebhookConfiguration (none for any other object).
func hooksOf(obj client.Object) []hook {
	var hs []hook
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			hs = append(hs, hook{c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig})
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			hs = append(hs, hook{c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig})
		}
	}
	return hs
}

// emptyLike returns an empty object of obj's configuration kind, and the
// kind's name for messages.
func emptyLike(obj client.Object) (client.Object, string) {
	if _, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}, "MutatingWebhookConfiguration"
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{}, "ValidatingWebhookConfiguration"
}

// setWebhooks replaces dst's webhooks with src's (both of one kind).
func setWebhooks(dst, src client.Object) {
	switch d := dst.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		d.Webhooks = src.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		d.Webhooks = src.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks
	}
}

// Apply creates each configuration of want or replaces the webhooks of
// the existing one of that kind and name (taking over one the chart
// installed).
func Apply(ctx context.Context, c client.Client, want ...client.Object) error {
	for _, w := range want {
		if err := apply(ctx, c, w); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, c client.Client, want client.Object) error {
	existing, kind := emptyLike(want)
	switch err := c.Get(ctx, client.ObjectKey{Name: want.GetName()}, existing); {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, want.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind, want.GetName(), err)
	}
	setWebhooks(existing, want)
	labels := existing.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range want.GetLabels() {
		labels[k] = v
	}
	existing.SetLabels(labels)
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating %s %s: %w", kind, want.GetName(), err)
	}
	return nil
}

// PatchCABundle sets caBundle on every webhook of the named validating and
// mutating configurations (the chart's, whose bundles are empty until the
// controller fills them). It reports whether the validating one exists.
func PatchCABundle(ctx context.Context, c client.Client, name string, caBundle []byte) (bool, error) {
	found := false
	for i, obj := range []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}} {
		ok, err := patchCABundle(ctx, c, obj, name, caBundle)
		if err != nil {
			return found, err
		}
		if i == 0 {
			found = ok
		}
	}
	return found, nil
}

func patchCABundle(ctx context.Context, c client.Client, obj client.Object, name string, caBundle []byte) (bool, error) {
	_, kind := emptyLike(obj)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	base := obj.DeepCopyObject().(client.Object)
	changed := false
	for _, h := range hooksOf(obj) {
		if !bytes.Equal(h.config.CABundle, caBundle) {
			h.config.CABundle = caBundle
			changed = true
		}
	}
	if !changed {
		return true, nil
	}
	if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return true, fmt.Errorf("patching the caBundle of %s %s: %w", kind, name, err)
	}
	return true, nil
}

// DeleteIfOurs deletes the named validating and mutating configurations
// when their first webhook still calls url with caBundle, i.e. no other
// controller took them over.
func DeleteIfOurs(ctx context.Context, c client.Client, name, url string, caBundle []byte) error {
	for _, obj := range []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}} {
		if err := deleteIfOurs(ctx, c, obj, name, url, caBundle); err != nil {
			return err
		}
	}
	return nil
}

func deleteIfOurs(ctx context.Context, c client.Client, obj client.Object, name, url string, caBundle []byte) error {
	_, kind := emptyLike(obj)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	hs := hooksOf(obj)
	if len(hs) == 0 {
		return nil
	}
	cc := hs[0].config
	if cc.URL == nil || !strings.HasPrefix(*cc.URL, url+"/") || !bytes.Equal(cc.CABundle, caBundle) {
		return nil
	}
	rv := obj.GetResourceVersion()
	err := c.Delete(ctx, obj, client.Preconditions{ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s: %w", kind, name, err)
	}
	return nil
}
