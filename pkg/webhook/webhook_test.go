package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

func TestGenerateCertificates(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c, err := GenerateCertificates([]string{"127.0.0.1", "localhost"}, time.Hour, now)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(c.CA))
	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: now.Add(30 * time.Minute)})
		assert.NoError(t, err, host)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", CurrentTime: now.Add(2 * time.Hour)})
	assert.Error(t, err, "expired after validity")
	assert.Equal(t, now.Add(time.Hour), c.NotAfter)

	parsed, err := ParseCertificates(c.CA, c.Cert, c.Key)
	require.NoError(t, err)
	assert.Equal(t, c.NotAfter, parsed.NotAfter)

	_, err = GenerateCertificates(nil, time.Hour, now)
	assert.Error(t, err)
}

func TestCertHolder(t *testing.T) {
	h := &CertHolder{}
	_, err := h.GetCertificate(nil)
	assert.Error(t, err, "nothing to serve before Set")
	c, err := GenerateCertificates([]string{"localhost"}, time.Hour, time.Now())
	require.NoError(t, err)
	require.NoError(t, h.Set(c))
	got, err := h.GetCertificate(nil)
	require.NoError(t, err)
	assert.NotEmpty(t, got.Certificate)
	assert.Same(t, c, h.Current())
}

// TestBuiltinDefinitionsCompile: every definition oamflow ships passes the
// webhook (the chart installs them while the webhook may be up).
func TestBuiltinDefinitionsCompile(t *testing.T) {
	engine := cuex.NewEngine()
	n := 0
	err := fs.WalkDir(definitions.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".cue" {
			return err
		}
		data, err := fs.ReadFile(definitions.FS, p)
		require.NoError(t, err)
		f, err := definition.ParseCUE(p, data)
		require.NoError(t, err, p)
		obj, err := f.Object("oamflow-system")
		require.NoError(t, err, p)
		assert.NoError(t, ValidateDefinition(engine, obj), p)
		n++
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, n, 20)
}

// TestKubeVelaDefinitionsAdmitted: KubeVela v1.11's own definitions (the
// corpus's definitions/) pass the webhook, without warnings.
func TestKubeVelaDefinitionsAdmitted(t *testing.T) {
	dir := filepath.Join(corpus.Dir(t), "definitions")
	engine := cuex.NewEngine()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".cue" {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		f, err := definition.ParseCUE(p, data)
		require.NoError(t, err, p)
		obj, err := f.Object("vela-system")
		require.NoError(t, err, p)
		warnings, err := CheckDefinition(engine, obj)
		assert.NoError(t, err, p)
		assert.Empty(t, warnings, p)
		n++
		return nil
	}))
	assert.Equal(t, 91, n)
}

func TestDefinitionWarnings(t *testing.T) {
	d := &v1beta1.WorkflowStepDefinition{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	d.Spec.Schematic = &common.Schematic{CUE: &common.CUE{Template: "import \"vela/gadget\"\nx: gadget.#Do\nparameter: {}\n"}}
	warnings, err := CheckDefinition(cuex.NewEngine(), d)
	require.NoError(t, err)
	assert.Equal(t, []string{`workflow-step "s": imports vela/gadget, which oamflow does not provide: the step fails when it runs (at workflow-step s:1:8)`}, warnings)
}

func TestValidateDefinition(t *testing.T) {
	engine := cuex.NewEngine()
	def := func(template, health string) *v1beta1.ComponentDefinition {
		d := &v1beta1.ComponentDefinition{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		d.Spec.Schematic = &common.Schematic{CUE: &common.CUE{Template: template}}
		if health != "" {
			d.Spec.Status = &common.Status{HealthPolicy: health}
		}
		return d
	}
	cases := []struct {
		reason string
		obj    *v1beta1.ComponentDefinition
		err    string
	}{
		{"compiles", def("output: {apiVersion: \"v1\", kind: \"ConfigMap\"}", "isHealth: true"), ""},
		{"no template", def("", ""), ""},
		{"template syntax error", def("output: {", ""), `component "c" is invalid:` + "\n  spec.schematic.cue.template: "},
		{"health policy syntax error", def("output: {}", "isHealth: ("), "spec.status.healthPolicy: "},
		{"a template importing tool/exec is refused", def("import \"tool/exec\"\noutput: {apiVersion: \"v1\", kind: \"ConfigMap\"}", ""),
			`spec.schematic.cue.template: component "c": imports "tool/exec", which is refused: CUE's tool packages run commands`},
		{"a health policy importing tool/http is refused", def("output: {apiVersion: \"v1\", kind: \"ConfigMap\"}", "import \"tool/http\"\nisHealth: true"),
			`spec.status.healthPolicy: health policy "c": imports "tool/http", which is refused`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := ValidateDefinition(engine, tc.obj)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// review builds an admission request for obj (and old, on update).
func review(t testing.TB, op admissionv1.Operation, obj, old runtime.Object) admission.Request {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "default", Object: raw(obj), OldObject: raw(old),
	}}
}

func TestApplicationValidator(t *testing.T) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return builtins }), nil)
	good, bad := webApp(`{"image":"nginx"}`), webApp(`{"image":42}`)
	deleting := bad.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	cases := []struct {
		reason  string
		req     admission.Request
		allowed bool
		message string
	}{
		{"valid create", review(t, admissionv1.Create, good, nil), true, ""},
		{"wrong type on create", review(t, admissionv1.Create, bad, nil), false, "application default/a is invalid: spec.components[0].properties.image: "},
		{"wrong type on update", review(t, admissionv1.Update, bad, good), false, "spec.components[0].properties.image"},
		{"spec unchanged (the controller's finalizer write)", review(t, admissionv1.Update, relabelled, bad), true, ""},
		{"being deleted", review(t, admissionv1.Update, deleting, good), true, ""},
		{"delete", review(t, admissionv1.Delete, nil, bad), true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			resp := v.Handle(context.Background(), tc.req)
			assert.Equal(t, tc.allowed, resp.Allowed, resp.Result)
			if tc.message != "" {
				require.NotNil(t, resp.Result)
				assert.Contains(t, resp.Result.Message, tc.message)
			}
		})
	}
}

const dbDefinition = `"db": {
	type: "component"
	description: "A database with immutable settings."
	attributes: workload: definition: {apiVersion: "v1", kind: "ConfigMap"}
}
template: {
	output: {apiVersion: "v1", kind: "ConfigMap", data: {size: parameter.storage.size, engine: parameter.engine, name: parameter.name}}
	parameter: {
		name: string
		storage: {
			// +immutable
			size: string
		}
		// +usage=Database engine
		// +immutable
		engine: *"pg" | "mysql"
	}
}
`

func TestImmutableProperties(t *testing.T) {
	defs, err := appfile.NewFSSource(fstest.MapFS{"db.cue": {Data: []byte(dbDefinition)}}, ".")
	require.NoError(t, err)
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	src := appfile.Chain(defs, builtins)
	v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return src }), nil)
	app := func(props string) *v1beta1.Application {
		a := &v1beta1.Application{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
		}
		a.Spec.Components = []common.ApplicationComponent{{Name: "db", Type: "db", Properties: &runtime.RawExtension{Raw: []byte(props)}}}
		return a
	}
	base := app(`{"name":"x","storage":{"size":"1Gi"},"engine":"pg"}`)
	cases := []struct {
		reason  string
		app     *v1beta1.Application
		allowed bool
		message string
	}{
		{"a mutable field changes", app(`{"name":"y","storage":{"size":"1Gi"},"engine":"pg"}`), true, ""},
		{"a nested immutable field changes", app(`{"name":"x","storage":{"size":"2Gi"},"engine":"pg"}`), false,
			`application default/a is invalid: spec.components[0].properties.storage.size: is immutable (marked +immutable in component "db"): it was "1Gi", not "2Gi"`},
		{"an immutable field is removed", app(`{"name":"x","storage":{"size":"1Gi"}}`), false,
			`spec.components[0].properties.engine: is immutable (marked +immutable in component "db") and cannot be removed; it was "pg"`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			resp := v.Handle(context.Background(), review(t, admissionv1.Update, tc.app, base))
			assert.Equal(t, tc.allowed, resp.Allowed, resp.Result)
			if tc.message != "" {
				require.NotNil(t, resp.Result)
				assert.Contains(t, resp.Result.Message, tc.message)
			}
		})
	}
	resp := v.Handle(context.Background(), review(t, admissionv1.Create, app(`{"name":"x","storage":{"size":"2Gi"}}`), nil))
	assert.True(t, resp.Allowed, "creates are not compared with anything")
}

func webApp(props string) *v1beta1.Application {
	a := &v1beta1.Application{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
	}
	a.Spec.Components = []common.ApplicationComponent{{Name: "web", Type: "webservice", Properties: &runtime.RawExtension{Raw: []byte(props)}}}
	return a
}

// TestApplicationValidatorEngines: with a pool, each review evaluates with
// an Engine borrowed from it (and waits for one, no longer than the
// review may take).
func TestApplicationValidatorEngines(t *testing.T) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(t, err)
	v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return builtins }), nil)
	v.Engines = cuex.NewPool(1)
	app := webApp(`{"image":"nginx"}`)
	req := review(t, admissionv1.Create, app, nil)

	lent, err := v.Engines.Get(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	resp := v.Handle(ctx, req)
	assert.False(t, resp.Allowed, "no Engine was free until the review's context ended")
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusServiceUnavailable, resp.Result.Code)

	// Reviews that evaluate no CUE do not wait for an Engine: the
	// controller can always write its finalizer and remove it.
	relabelled := app.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	deleting := app.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, upd := range []*v1beta1.Application{relabelled, deleting} {
		resp := v.Handle(ctx, review(t, admissionv1.Update, upd, app))
		assert.True(t, resp.Allowed, resp.Result)
	}

	v.Engines.Put(lent)
	resp = v.Handle(context.Background(), req)
	assert.True(t, resp.Allowed, resp.Result)
	again, err := v.Engines.Get(context.Background())
	require.NoError(t, err)
	assert.Same(t, lent, again, "the review gave its Engine back")
}

// BenchmarkApplicationValidator is one admission review of a webservice
// Application, each with a fresh Engine (no pool) or one borrowed from a
// pool (the manager's setup).
func BenchmarkApplicationValidator(b *testing.B) {
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	require.NoError(b, err)
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%t", pooled), func(b *testing.B) {
			v := NewApplicationValidator(SourceFactoryFn(func(string) appfile.DefinitionSource { return builtins }), nil)
			if pooled {
				v.Engines = cuex.NewPool(1)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// A new image each time: the memo cannot answer.
				req := review(b, admissionv1.Create, webApp(fmt.Sprintf(`{"image":"nginx:%d"}`, i)), nil)
				if resp := v.Handle(context.Background(), req); !resp.Allowed {
					b.Fatal(resp.Result)
				}
			}
		})
	}
}
