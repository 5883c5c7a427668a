package cli

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
	"github.com/oamflow/oamflow/pkg/testing/envtest"
)

// TestDefApplyKubeVelaDefinitions: `oamflow def apply` of KubeVela v1.11's
// own definitions (the corpus's definitions/ folder, all 91) into an API
// server with oamflow's CRDs and its validating webhook serving, as a
// KubeVela user installing them would: every one is created, none warns,
// the webhook and the CRD schemas admit them all, and a second apply
// changes nothing (issue 15, Deliver 2).
func TestDefApplyKubeVelaDefinitions(t *testing.T) {
	dir := filepath.Join(corpus.Dir(t), "definitions")
	var files int
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".cue") {
			files++
		}
		return err
	}))
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	env := envtest.New(t, envtest.WithCRDs("charts/oamflow/crds"), envtest.WithScheme(s))
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oamflow-system"}}))
	startManagerWithWebhook(t, env)
	// Wait until the webhook refuses a definition whose CUE does not compile.
	bad := &v1beta1.TraitDefinition{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "oamflow-system"},
		Spec: v1beta1.TraitDefinitionSpec{Schematic: &common.Schematic{CUE: &common.CUE{Template: "patch: ("}}}}
	require.Eventually(t, func() bool {
		err := env.Client.Create(ctx, bad.DeepCopy(), client.DryRunAll)
		return err != nil && refusedInput(err)
	}, 60*time.Second, 200*time.Millisecond, "the webhook is registered and serving")
	kc := kubeconfigFor(t, env)

	out, errOut, code := runOamflow(t, "--kubeconfig", kc, "def", "apply", dir)
	require.Equal(t, ExitOK, code, "%s%s", out, errOut)
	assert.Empty(t, errOut, "no warning, no file skipped")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, files, "one line per definition file")
	var applied []string
	for _, l := range lines {
		what, ok := strings.CutSuffix(l, " created in oamflow-system")
		if assert.True(t, ok, "created: %s", l) {
			applied = append(applied, what)
		}
	}

	var served []string
	for _, kind := range []appfile.DefinitionKind{appfile.KindComponent, appfile.KindTrait, appfile.KindPolicy, appfile.KindWorkflowStep} {
		objs, err := listDefinitions(ctx, env.Client, []appfile.DefinitionKind{kind}, []string{"oamflow-system"})
		require.NoError(t, err)
		for _, o := range objs {
			served = append(served, kind.CRDKind()+"/"+o.GetName())
		}
	}
	sort.Strings(applied)
	sort.Strings(served)
	assert.Equal(t, applied, served, "the cluster holds what def apply reported")

	out, errOut, code = runOamflow(t, "--kubeconfig", kc, "def", "apply", dir)
	require.Equal(t, ExitOK, code, "%s%s", out, errOut)
	assert.Equal(t, files, strings.Count(out, " unchanged in oamflow-system\n"), "a second apply writes nothing:\n%s", out)
	t.Logf("def apply %s: %d definitions created, then %d unchanged", dir, len(applied), files)
}
