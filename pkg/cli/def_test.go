package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

func TestDefVet(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.cue", "good: {\n\ttype: \"trait\"\n}\ntemplate: {\n\tparameter: n: int\n\tpatch: spec: replicas: parameter.n\n}\n")
	conflict := writeFile(t, dir, "conflict.cue", "conflict: {\n\ttype: \"component\"\n}\ntemplate: {\n\toutput: {apiVersion: \"v1\", kind: \"ConfigMap\", data: a: \"x\"}\n\toutput: data: a: \"y\"\n}\n")
	noOutput := writeFile(t, dir, "no-output.cue", "\"no-output\": {\n\ttype: \"component\"\n}\ntemplate: {\n\tparameter: n: int\n}\n")
	badHealth := writeFile(t, dir, "bad-health.cue", "\"bad-health\": {\n\ttype: \"component\"\n\tattributes: status: healthPolicy: \"isHealth: (\"\n}\ntemplate: {\n\toutput: {apiVersion: \"v1\", kind: \"ConfigMap\"}\n}\n")

	out, errOut, code := runOamflow(t, "def", "vet", good, "../../definitions/workflowsteps/apply-component.cue")
	assert.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, `✓ `+good+`: trait "good"`)
	assert.Contains(t, out, `workflow-step "apply-component"`)

	out, errOut, code = runOamflow(t, "def", "vet", good, conflict, noOutput, badHealth)
	assert.Equal(t, ExitUserError, code)
	assert.Contains(t, errOut, "3 of 4 definitions are invalid")
	assert.Contains(t, out, `✗ `+conflict+`: component "conflict"`)
	assert.Contains(t, out, `output.data.a: conflicting values "y" and "x" (at `+conflict+`:5:57, `+conflict+`:6:19)`)
	assert.Contains(t, out, "a component template defines at least one of output, outputs")
	assert.Contains(t, out, `health policy "bad-health"`)
}

func TestDefRenderAndInit(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"component", "trait", "policy", "workflow-step"} {
		t.Run(kind, func(t *testing.T) {
			file := filepath.Join(dir, kind+".cue")
			_, errOut, code := runOamflow(t, "def", "init", "my-"+kind, "--type", kind, "--desc", "made by init", "-o", file)
			require.Equal(t, ExitOK, code, errOut)
			out, errOut, code := runOamflow(t, "def", "vet", file)
			require.Equal(t, ExitOK, code, "init's scaffold must vet: %s%s", out, errOut)

			yamlOut, errOut, code := runOamflow(t, "def", "render", file)
			require.Equal(t, ExitOK, code, errOut)
			assert.Contains(t, yamlOut, "name: my-"+kind)
			assert.Contains(t, yamlOut, "definition.oam.dev/description: made by init")
			yamlFile := writeFile(t, dir, kind+".yaml", yamlOut)
			cueOut, errOut, code := runOamflow(t, "def", "render", yamlFile, "-o", "cue")
			require.Equal(t, ExitOK, code, errOut)
			assert.Contains(t, cueOut, `"my-`+kind+`": {`)
			again := writeFile(t, dir, kind+"-again.cue", cueOut)
			yamlAgain, errOut, code := runOamflow(t, "def", "render", again)
			require.Equal(t, ExitOK, code, errOut)
			assert.Equal(t, yamlOut, yamlAgain, ".cue → YAML → .cue → YAML is stable")
		})
	}
	_, errOut, code := runOamflow(t, "def", "init", "x", "--type", "widget")
	assert.Equal(t, ExitUserError, code)
	assert.Contains(t, errOut, "--type must be component, trait, policy or workflow-step")
}

// kubeconfigFor writes a kubeconfig reaching env's API server.
func kubeconfigFor(t *testing.T, env *envtest.Environment) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	cfg.CurrentContext = "test"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, p))
	return p
}

func TestDefClusterCommandsAndOnlineDryRun(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme))
	kc := kubeconfigFor(t, env)
	ctx := t.Context()
	for _, ns := range []string{"oamflow-system", "team-a"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	dir := t.TempDir()
	trait := writeFile(t, dir, "stamp.cue", "stamp: {\n\ttype: \"trait\"\n\tdescription: \"Stamps a label.\"\n}\ntemplate: {\n\tparameter: value: *\"system\" | string\n\tpatch: metadata: labels: stamp: parameter.value\n}\n")

	out, errOut, code := runOamflow(t, "--kubeconfig", kc, "def", "apply", trait)
	require.Equal(t, ExitOK, code, errOut)
	assert.Equal(t, "TraitDefinition/stamp created in oamflow-system\n", out)
	out, _, _ = runOamflow(t, "--kubeconfig", kc, "def", "apply", trait)
	assert.Equal(t, "TraitDefinition/stamp unchanged in oamflow-system\n", out)
	require.NoError(t, os.WriteFile(trait, []byte(strings.Replace(mustRead(t, trait), `*"system"`, `*"system-v2"`, 1)), 0o644))
	out, _, _ = runOamflow(t, "--kubeconfig", kc, "def", "apply", trait)
	assert.Equal(t, "TraitDefinition/stamp updated in oamflow-system\n", out)

	// A definition of the same name in the app's namespace wins.
	teamTrait := writeFile(t, dir, "team-stamp.cue", strings.Replace(mustRead(t, trait), `*"system-v2"`, `*"team"`, 1))
	_, errOut, code = runOamflow(t, "--kubeconfig", kc, "-n", "team-a", "def", "apply", teamTrait)
	require.Equal(t, ExitOK, code, errOut)

	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "def", "list", "--type", "trait")
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "stamp")
	assert.Contains(t, out, "Stamps a label.")
	assert.NotContains(t, out, "team-a", "without -A only the system namespaces are listed")
	out, _, _ = runOamflow(t, "--kubeconfig", kc, "def", "list", "-A")
	assert.Contains(t, out, "team-a")

	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "def", "get", "stamp")
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, `"stamp": {`)
	assert.Contains(t, out, `*"system-v2"`)
	_, errOut, code = runOamflow(t, "--kubeconfig", kc, "def", "get", "nothing")
	assert.Equal(t, ExitUserError, code)
	assert.Contains(t, errOut, `no definition named "nothing"`)

	app := writeFile(t, dir, "app.yaml", `apiVersion: core.oam.dev/v1beta1
kind: Application
metadata: {name: a, namespace: team-a}
spec:
  components:
    - name: web
      type: webservice
      properties: {image: nginx}
      traits: [{type: stamp}]
`)
	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "dry-run", "-f", app)
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "stamp: team", "the app namespace's definition wins")
	require.NoError(t, env.Client.Delete(ctx, &v1beta1.TraitDefinition{ObjectMeta: metav1.ObjectMeta{Name: "stamp", Namespace: "team-a"}}))
	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "dry-run", "-f", app)
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "stamp: system-v2", "then oamflow-system")

	got := &v1beta1.TraitDefinition{}
	require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: "oamflow-system", Name: "stamp"}, got))
	assert.Contains(t, got.Spec.Schematic.CUE.Template, "system-v2")

	// "stamp@v1" reads DefinitionRevision stamp-v1.
	pinned := got.DeepCopy()
	pinned.ObjectMeta = metav1.ObjectMeta{Name: "stamp", Namespace: "oamflow-system"}
	pinned.Spec.Schematic.CUE.Template = strings.Replace(pinned.Spec.Schematic.CUE.Template, `*"system-v2"`, `*"pinned"`, 1)
	require.NoError(t, env.Client.Create(ctx, &v1beta1.DefinitionRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "stamp-v1", Namespace: "oamflow-system"},
		Spec:       v1beta1.DefinitionRevisionSpec{Revision: 1, RevisionHash: "h", DefinitionType: v1beta1.TraitType, TraitDefinition: pinned},
	}))
	pinnedApp := writeFile(t, dir, "pinned.yaml", strings.Replace(mustRead(t, app), "{type: stamp}", "{type: stamp@v1}", 1))
	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "dry-run", "-f", pinnedApp)
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "stamp: pinned")
	_, errOut, code = runOamflow(t, "--kubeconfig", kc, "dry-run", "-f", writeFile(t, dir, "v9.yaml", strings.Replace(mustRead(t, app), "{type: stamp}", "{type: stamp@v9}", 1)))
	assert.Equal(t, ExitUserError, code)
	assert.Contains(t, errOut, `unknown trait type "stamp@v9"`)

	// Online, clusterLabelSelector picks registered clusters.
	for name, region := range map[string]string{"east-1": "east", "west-1": "west"} {
		sec, err := multicluster.NewClusterSecret("oamflow-system", name, multicluster.Credentials{Endpoint: "https://" + name + ".example:6443", Token: "t"}, map[string]string{"region": region}, multicluster.ClientSettings{})
		require.NoError(t, err)
		require.NoError(t, env.Client.Create(ctx, sec))
	}
	topo := writeFile(t, dir, "topo.yaml", mustRead(t, app)+`  policies:
    - {name: east, type: topology, properties: {clusterLabelSelector: {region: east}}}
`)
	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "dry-run", "-f", topo)
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, `→ cluster "east-1", namespace "team-a"`)
	assert.NotContains(t, out, "west-1")
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// managedBy is a managedFields entry of manager over the main resource
// (subresource "") or a subresource, owning fieldsV1.
func managedBy(manager, subresource, fieldsV1 string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fieldsV1)}}
}

func TestMergeDefinition(t *testing.T) {
	const owned = `{"f:metadata":{"f:labels":{".":{},"f:mine":{}},"f:annotations":{".":{},"f:example.com/mine":{}}},"f:spec":{"f:podDisruptive":{}}}`
	cases := []struct {
		reason          string
		served          metav1.ObjectMeta
		want            metav1.ObjectMeta
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			reason:          "no managedFields: the served keys are kept, want's are set over them",
			served:          metav1.ObjectMeta{Labels: map[string]string{"team": "a", "tier": "old"}, Annotations: map[string]string{"meta.helm.sh/release-name": "oamflow"}},
			want:            metav1.ObjectMeta{Labels: map[string]string{"tier": "new"}},
			wantLabels:      map[string]string{"team": "a", "tier": "new"},
			wantAnnotations: map[string]string{"meta.helm.sh/release-name": "oamflow"},
		},
		{
			reason: "keys the manager set and want no longer has are removed, the others kept",
			served: metav1.ObjectMeta{
				Labels:        map[string]string{"mine": "1", "team": "a"},
				Annotations:   map[string]string{"example.com/mine": "x", "other": "y"},
				ManagedFields: []metav1.ManagedFieldsEntry{managedBy(FieldManager, "", owned)},
			},
			wantLabels:      map[string]string{"team": "a"},
			wantAnnotations: map[string]string{"other": "y"},
		},
		{
			reason: "a key the manager set and want still has takes want's value",
			served: metav1.ObjectMeta{
				Labels:        map[string]string{"mine": "1"},
				ManagedFields: []metav1.ManagedFieldsEntry{managedBy(FieldManager, "", owned)},
			},
			want:       metav1.ObjectMeta{Labels: map[string]string{"mine": "2"}},
			wantLabels: map[string]string{"mine": "2"},
		},
		{
			reason: "another manager's keys, and the manager's status entries, are not the manager's",
			served: metav1.ObjectMeta{
				Labels: map[string]string{"mine": "1"},
				ManagedFields: []metav1.ManagedFieldsEntry{
					managedBy("helm", "", owned),
					managedBy(FieldManager, "status", owned),
				},
			},
			wantLabels: map[string]string{"mine": "1"},
		},
		{
			reason: "an unreadable managedFields entry owns nothing",
			served: metav1.ObjectMeta{
				Labels:        map[string]string{"mine": "1"},
				ManagedFields: []metav1.ManagedFieldsEntry{managedBy(FieldManager, "", `{"f:metadata":`)},
			},
			wantLabels: map[string]string{"mine": "1"},
		},
		{
			reason: "the rest of the metadata is served's: finalizers, ownerReferences, uid, resourceVersion, timestamps",
			served: metav1.ObjectMeta{
				Finalizers:                 []string{"example.com/keep"},
				OwnerReferences:            []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-1"}},
				UID:                        "u-2",
				ResourceVersion:            "7",
				Generation:                 3,
				GenerateName:               "stamp-",
				CreationTimestamp:          metav1.Unix(1, 0),
				DeletionTimestamp:          &metav1.Time{Time: metav1.Unix(2, 0).Time},
				DeletionGracePeriodSeconds: new(int64),
				ManagedFields:              []metav1.ManagedFieldsEntry{managedBy("helm", "", owned)},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			served := &v1beta1.TraitDefinition{ObjectMeta: tc.served, Spec: v1beta1.TraitDefinitionSpec{PodDisruptive: true}}
			want := &v1beta1.TraitDefinition{ObjectMeta: tc.want, Spec: v1beta1.TraitDefinitionSpec{Stage: "PostDispatch"}}
			servedBefore, wantBefore := served.DeepCopy(), want.DeepCopy()
			got := mergeDefinition(served, want, FieldManager).(*v1beta1.TraitDefinition)
			assert.Equal(t, tc.wantLabels, got.Labels)
			assert.Equal(t, tc.wantAnnotations, got.Annotations)
			assert.Equal(t, want.Spec, got.Spec, "the spec is want's")
			wantMeta := served.ObjectMeta.DeepCopy()
			wantMeta.Labels, wantMeta.Annotations, wantMeta.ManagedFields = tc.wantLabels, tc.wantAnnotations, nil
			assert.Equal(t, *wantMeta, got.ObjectMeta, "the rest of the metadata is served's, managedFields left to the API server")
			assert.Equal(t, servedBefore, served, "served is not modified")
			assert.Equal(t, wantBefore, want, "want is not modified")
		})
	}
}

// TestDefApplyMetadata: def apply sets a file's labels and annotations
// and keeps those another tool added (a second apply of the same file is
// unchanged and writes nothing); a key removed from the file is removed
// from the cluster, a key the other tool added stays. The finalizers and
// ownerReferences another client set, and the rest of the metadata, are
// kept by an update that changes the spec.
func TestDefApplyMetadata(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(scheme))
	kc := kubeconfigFor(t, env)
	ctx := t.Context()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}))
	// fileWith is the stamp trait with the parameter's default value.
	fileWith := func(labels, annotations, description, value string) string {
		return writeFile(t, t.TempDir(), "stamp.cue", "stamp: {\n\ttype: \"trait\"\n\tdescription: \""+description+"\"\n\tlabels: {"+labels+"}\n\tannotations: {"+annotations+"}\n}\n"+
			"template: {\n\tparameter: value: *\""+value+"\" | string\n\tpatch: metadata: labels: stamp: parameter.value\n}\n")
	}
	file := func(labels, annotations, description string) string {
		return fileWith(labels, annotations, description, "x")
	}
	get := func() *v1beta1.TraitDefinition {
		d := &v1beta1.TraitDefinition{}
		require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: "oamflow-system", Name: "stamp"}, d))
		return d
	}
	apply := func(f string) string {
		out, errOut, code := runOamflow(t, "--kubeconfig", kc, "def", "apply", f)
		require.Equal(t, ExitOK, code, errOut)
		return out
	}

	v1 := file(`tier: "base", owner: "a"`, `"example.com/note": "x"`, "Stamps a label.")
	assert.Equal(t, "TraitDefinition/stamp created in oamflow-system\n", apply(v1))
	// kubectl label/annotate traitdefinition stamp …
	d := get()
	d.Labels["team"] = "platform"
	d.Annotations["example.com/other"] = "y"
	require.NoError(t, env.Client.Update(ctx, d, client.FieldOwner("kubectl-edit")))
	rv := get().ResourceVersion

	assert.Equal(t, "TraitDefinition/stamp unchanged in oamflow-system\n", apply(v1))
	assert.Equal(t, rv, get().ResourceVersion, "unchanged: not written")

	assert.Equal(t, "TraitDefinition/stamp updated in oamflow-system\n", apply(file(`tier: "base"`, "", "Stamps a label (v2).")))
	d = get()
	assert.Equal(t, map[string]string{"tier": "base", "team": "platform"}, d.Labels)
	assert.Equal(t, map[string]string{"definition.oam.dev/description": "Stamps a label (v2).", "example.com/other": "y"}, d.Annotations)

	assert.Equal(t, "TraitDefinition/stamp updated in oamflow-system\n", apply(file("", "", "")))
	d = get()
	assert.Equal(t, map[string]string{"team": "platform"}, d.Labels)
	assert.Equal(t, map[string]string{"example.com/other": "y"}, d.Annotations)

	// Another client gives the definition a finalizer and an owner (kubectl
	// patch traitdefinition stamp --type merge -p '{"metadata":{"finalizers":…,"ownerReferences":…}}');
	// def apply of a changed file keeps them, and the rest of the metadata.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "oamflow-system", Name: "owner"}}
	require.NoError(t, env.Client.Create(ctx, owner))
	const finalizer = "example.com/keep"
	ownerRefs := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	d = get()
	patch := client.MergeFrom(d.DeepCopy())
	d.Finalizers = []string{finalizer}
	d.OwnerReferences = ownerRefs
	require.NoError(t, env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-patch")))
	t.Cleanup(func() { // so that the namespace can go
		d := &v1beta1.TraitDefinition{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "oamflow-system", Name: "stamp"}, d); err != nil {
			return
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Finalizers = nil
		assert.NoError(t, env.Client.Patch(context.Background(), d, patch))
	})
	before := get()

	assert.Equal(t, "TraitDefinition/stamp updated in oamflow-system\n", apply(fileWith("", "", "", "y")))
	d = get()
	require.NotNil(t, d.Spec.Schematic)
	require.NotNil(t, d.Spec.Schematic.CUE)
	assert.Contains(t, d.Spec.Schematic.CUE.Template, `*"y" | string`, "the spec is the file's")
	assert.NotEqual(t, before.ResourceVersion, d.ResourceVersion)
	assert.Equal(t, []string{finalizer}, d.Finalizers, "another client's finalizer is kept")
	assert.Equal(t, ownerRefs, d.OwnerReferences, "another client's ownerReferences are kept")
	assert.Equal(t, map[string]string{"team": "platform"}, d.Labels)
	assert.Equal(t, map[string]string{"example.com/other": "y"}, d.Annotations)
	assert.Equal(t, before.UID, d.UID)
	assert.Equal(t, before.CreationTimestamp, d.CreationTimestamp)
	assert.Nil(t, d.DeletionTimestamp)
	want := before.ObjectMeta.DeepCopy() // the metadata is as it was but for what the update itself changes
	want.ResourceVersion, want.Generation, want.ManagedFields = d.ResourceVersion, d.Generation, d.ManagedFields
	assert.Equal(t, *want, d.ObjectMeta, "no other metadata is dropped")

	rv = d.ResourceVersion
	assert.Equal(t, "TraitDefinition/stamp unchanged in oamflow-system\n", apply(fileWith("", "", "", "y")))
	d = get()
	assert.Equal(t, rv, d.ResourceVersion, "unchanged: not written")
	assert.Equal(t, []string{finalizer}, d.Finalizers)
	assert.Equal(t, ownerRefs, d.OwnerReferences)
}

// TestDefVetWarnsUnprovided: a step definition using an action or a
// package oamflow does not provide is valid, with a warning naming it and
// its file:line:column (running it fails the step with the same words:
// pkg/workflow TestStepUsingUnprovidedFails).
func TestDefVetWarnsUnprovided(t *testing.T) {
	file := writeFile(t, t.TempDir(), "uses-unprovided.cue", `import (
	"vela/kube"
	"vela/gadget"
)

"uses-unprovided": {
	type:        "workflow-step"
	description: "Reads with an action oamflow does not know."
}
template: {
	read: kube.#Nope & {$params: value: parameter.value}
	g: gadget.#Do & {}
	parameter: value: {...}
}
`)
	out, errOut, code := runOamflow(t, "def", "vet", file)
	assert.Equal(t, ExitOK, code, "warnings do not make it invalid: %s", errOut)
	assert.Equal(t, `✓ `+file+`: workflow-step "uses-unprovided"
    warning: workflow-step "uses-unprovided": uses kube.#Nope, which oamflow's vela/kube does not provide: the step fails when it runs (at `+file+`:11:8)
    warning: workflow-step "uses-unprovided": imports vela/gadget, which oamflow does not provide: the step fails when it runs (at `+file+`:3:2)
`, out)
	assert.Equal(t, "2 warning(s)\n", errOut)
}
