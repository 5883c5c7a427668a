package manager_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cli"
	"github.com/oamflow/oamflow/pkg/manager"
	oamwebhook "github.com/oamflow/oamflow/pkg/webhook"
)

// application builds an Application in default from a YAML spec.
func application(t *testing.T, name, spec string) *v1beta1.Application {
	t.Helper()
	app := &v1beta1.Application{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
	}
	require.NoError(t, yaml.Unmarshal([]byte(spec), &app.Spec))
	return app
}

const (
	validSpec = `
components:
- name: web
  type: webservice
  properties: {image: nginx:1.27}
`
	wrongTypeSpec = `
components:
- name: web
  type: webservice
  properties: {image: 42}
`
)

// controllerMessage is the message of the controller's Parsed condition
// for app: appfile.Parse against the cluster's definitions then the
// built-in ones, as the controller's parse phase does.
func controllerMessage(t *testing.T, app *v1beta1.Application) string {
	t.Helper()
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	_, err = appfile.Parse(context.Background(), app, appfile.Chain(appfile.NewClusterSource(env.Client, app.Namespace, ""), builtins))
	require.Error(t, err)
	var ve *appfile.InvalidError
	require.ErrorAs(t, err, &ve)
	return err.Error()
}

// updateApp changes Application default/name with change and updates it,
// retrying when the controller wrote in between.
func updateApp(ctx context.Context, c client.Client, name string, change func(*v1beta1.Application)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &v1beta1.Application{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, app); err != nil {
			return err
		}
		change(app)
		return c.Update(ctx, app)
	})
}

// TestWebhook runs the controller with its webhook registered the way a
// controller outside the cluster does it (URL on 127.0.0.1, generated CA)
// and applies Applications and definitions with a controller-runtime
// client, as kubectl apply would.
func TestWebhook(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.Webhook.Enabled = true
	o.Webhook.Port = freePort(t)
	o.Webhook.FailurePolicy = string(admissionregistrationv1.Fail)
	stop := startManager(t, o)

	bad := application(t, "bad", wrongTypeSpec)
	want := controllerMessage(t, bad)
	require.Contains(t, want, "spec.components[0].properties.image")
	// The API server picks up a new configuration within a second or so;
	// dry-run creates reach the webhook without storing anything.
	require.Eventually(t, func() bool {
		err := c.Create(ctx, bad.DeepCopy(), client.DryRunAll)
		return err != nil && bytes.Contains([]byte(err.Error()), []byte("denied the request"))
	}, 30*time.Second, 200*time.Millisecond, "the webhook refuses the bad Application")

	badDef := &v1beta1.TraitDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "TraitDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "default"},
		Spec: v1beta1.TraitDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{
			Template: "parameter: {replicas: int}\npatch: spec: replicas: parameter.replicas +\n",
		}}},
	}
	goodDef := badDef.DeepCopy()
	goodDef.Name = "fine"
	goodDef.Spec.Schematic.CUE.Template = "parameter: {replicas: int}\npatch: spec: replicas: parameter.replicas\n"

	cases := []struct {
		reason string
		do     func() error
		// denied is a substring of the refusal, "" when admitted.
		denied string
	}{
		{"a wrong property type is refused with the controller's message", func() error {
			return c.Create(ctx, bad.DeepCopy())
		}, `admission webhook "` + oamwebhook.ApplicationWebhookName + `" denied the request: ` + want},
		{"an unknown component type is refused", func() error {
			return c.Create(ctx, application(t, "unknown", "components: [{name: web, type: no-such-type}]"))
		}, `spec.components[0].type: unknown component type "no-such-type"`},
		{"a valid Application is admitted", func() error {
			return c.Create(ctx, application(t, "good", validSpec))
		}, ""},
		{"an update to a wrong property type is refused", func() error {
			return updateApp(ctx, c, "good", func(app *v1beta1.Application) { app.Spec = bad.Spec })
		}, "spec.components[0].properties.image"},
		{"a metadata-only update is admitted", func() error {
			return updateApp(ctx, c, "good", func(app *v1beta1.Application) { metav1.SetMetaDataLabel(&app.ObjectMeta, "team", "a") })
		}, ""},
		{"a definition whose CUE does not compile is refused", func() error {
			return c.Create(ctx, badDef.DeepCopy())
		}, `trait "broken" is invalid:`},
		{"a definition whose CUE compiles is admitted", func() error {
			return c.Create(ctx, goodDef.DeepCopy())
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := tc.do()
			if tc.denied == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.denied)
		})
	}

	// The mutating webhook recorded who wrote the Application, and a
	// hand-written writer is undone.
	recorded := &v1beta1.Application{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "good"}, recorded))
	writer := recorded.Annotations[v1beta1.AnnoUsername]
	assert.NotEmpty(t, writer, "the writer is recorded in %s", v1beta1.AnnoUsername)
	require.NoError(t, updateApp(ctx, c, "good", func(app *v1beta1.Application) {
		metav1.SetMetaDataAnnotation(&app.ObjectMeta, v1beta1.AnnoUsername, "someone-else")
	}))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "good"}, recorded))
	assert.Equal(t, writer, recorded.Annotations[v1beta1.AnnoUsername], "the record cannot be rewritten by hand")

	// `oamflow up` refuses the same Application with the same message:
	// first its own check, then (--validate=false) the webhook's.
	file := filepath.Join(t.TempDir(), "bad.yaml")
	data, err := yaml.Marshal(bad)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))
	kubeconfig := writeKubeconfig(t)
	for _, args := range [][]string{{"up", "-f", file}, {"up", "-f", file, "--validate=false"}} {
		var out, errOut bytes.Buffer
		root := cli.NewRootCommand(&out, &errOut)
		root.SetArgs(append(args, "--kubeconfig", kubeconfig))
		err := root.ExecuteContext(ctx)
		require.Error(t, err, "oamflow %v", args)
		assert.Contains(t, err.Error(), want, "oamflow %v", args)
		var ue *cli.UserError
		assert.ErrorAs(t, err, &ue, "oamflow %v: a refused Application is the user's error (exit 1)", args)
	}
	upErr := func() error {
		var out, errOut bytes.Buffer
		root := cli.NewRootCommand(&out, &errOut)
		root.SetArgs([]string{"up", "-f", file, "--kubeconfig", kubeconfig})
		return root.ExecuteContext(ctx)
	}()
	assert.Equal(t, want, upErr.Error(), "oamflow up prints the controller's message")

	deleteAllAndWait(t, "default")
	// A controller outside the cluster removes its registration when it
	// stops, so that nothing calls a webhook that is gone.
	stop()
	err = c.Get(ctx, client.ObjectKey{Name: oamwebhook.DefaultConfigurationName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "configuration deleted on shutdown, got %v", err)
	err = c.Get(ctx, client.ObjectKey{Name: oamwebhook.DefaultConfigurationName}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "mutating configuration deleted on shutdown, got %v", err)
}

// TestSecondControllerKeepsTheWebhook starts a second controller on the
// port of a running one (the README's out-of-cluster setup run twice):
// it must fail before registering anything, naming the flag, and leave
// the first controller's registration alone; the first restores its
// registration when it is deleted or taken over.
func TestSecondControllerKeepsTheWebhook(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.Webhook.Enabled = true
	o.Webhook.Port = freePort(t)
	o.Webhook.ReassertInterval = 500 * time.Millisecond
	stop := startManager(t, o)

	key := client.ObjectKey{Name: oamwebhook.DefaultConfigurationName}
	registered := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, key, vwc); err != nil || len(vwc.Webhooks) == 0 {
			return nil
		}
		return vwc
	}
	require.Eventually(t, func() bool { return registered() != nil }, 30*time.Second, 100*time.Millisecond, "the first controller registers its webhook")
	first := registered()
	ours := first.Webhooks[0].ClientConfig

	taken := func(t *testing.T) (int, string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l.Addr().(*net.TCPAddr).Port, l.Addr().String()
	}
	cases := []struct {
		reason string
		modify func(o *manager.Options)
		want   string
	}{
		{"the webhook port of the running controller", func(o *manager.Options) {},
			"--webhook-port " + strconv.Itoa(o.Webhook.Port) + ": address already in use (another oamflow-controller? pass --webhook-port)"},
		{"a taken metrics address", func(o *manager.Options) {
			o.Webhook.Port = freePort(t)
			_, a := taken(t)
			o.MetricsAddr = a
		}, "--metrics-bind-address 127.0.0.1:"},
		{"a taken probe address", func(o *manager.Options) {
			o.Webhook.Port = freePort(t)
			_, a := taken(t)
			o.ProbeAddr = a
		}, "--health-probe-bind-address 127.0.0.1:"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			second := o
			tc.modify(&second)
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			err := manager.Run(rctx, env.Config, second)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "address already in use")
			now := registered()
			require.NotNil(t, now, "the running controller's registration is still there")
			assert.Equal(t, ours.CABundle, now.Webhooks[0].ClientConfig.CABundle, "and still trusts its CA")
			assert.Equal(t, ours.URL, now.Webhooks[0].ClientConfig.URL)
		})
	}

	// Deleted (e.g. by an older controller stopping): restored.
	require.NoError(t, c.Delete(ctx, first))
	require.Eventually(t, func() bool {
		now := registered()
		return now != nil && bytes.Equal(now.Webhooks[0].ClientConfig.CABundle, ours.CABundle)
	}, 30*time.Second, 100*time.Millisecond, "the running controller restores a deleted registration")
	// Changed (another CA, as a second controller registering would):
	// restored.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		now := registered()
		if now == nil {
			return errors.New("registration missing")
		}
		for i := range now.Webhooks {
			now.Webhooks[i].ClientConfig.CABundle = []byte("not our CA")
		}
		return c.Update(ctx, now)
	}))
	require.Eventually(t, func() bool {
		now := registered()
		return now != nil && bytes.Equal(now.Webhooks[0].ClientConfig.CABundle, ours.CABundle)
	}, 30*time.Second, 100*time.Millisecond, "the running controller restores a changed registration")

	stop()
	assert.Nil(t, registered(), "the controller removes its own registration on shutdown")
}

// TestShutdownKeepsAnotherRegistration stops a controller whose
// configuration another controller took over: it must not delete it.
func TestShutdownKeepsAnotherRegistration(t *testing.T) {
	c := env.Client
	ctx := context.Background()
	o := testOptions()
	o.Webhook.Enabled = true
	o.Webhook.Port = freePort(t)
	o.Webhook.ReassertInterval = time.Hour
	stop := startManager(t, o)
	key := client.ObjectKey{Name: oamwebhook.DefaultConfigurationName}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.Eventually(t, func() bool { return c.Get(ctx, key, vwc) == nil }, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		require.NoError(t, c.Get(ctx, key, vwc))
		for i := range vwc.Webhooks {
			vwc.Webhooks[i].ClientConfig.CABundle = []byte("another controller's CA")
		}
		return c.Update(ctx, vwc)
	}))
	stop()
	require.NoError(t, c.Get(ctx, key, vwc), "another controller's registration survives our shutdown")
	require.NoError(t, c.Delete(ctx, vwc))
}
