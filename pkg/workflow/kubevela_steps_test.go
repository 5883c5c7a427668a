package workflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"

	"github.com/kubevela/pkg/cue/cuex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/testing/corpus"
)

// TestKubeVelaStepDefinitionsCompile compiles every workflow-step
// definition of KubeVela v1.11 (the corpus's definitions/) with the
// compiler steps run with, as the workflow engine does: what def vet
// accepts, the runtime compiles.
func TestKubeVelaStepDefinitionsCompile(t *testing.T) {
	dir := filepath.Join(corpus.Dir(t), "definitions")
	comp, err := NewCompiler()
	require.NoError(t, err)
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".cue") {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		df, err := definition.ParseCUE(p, b)
		require.NoError(t, err)
		if df.Kind != definition.KindWorkflowStep || strings.TrimSpace(df.Template) == "" {
			return nil
		}
		n++
		t.Run(df.Name, func(t *testing.T) {
			src := df.Template + "\ncontext: {name: \"app\", namespace: \"default\", stepName: \"s\"}\n"
			v, err := comp.CompileStringWithOptions(context.Background(), src, cuex.DisableResolveProviderFunctions{})
			require.NoError(t, err)
			assert.NoError(t, v.Validate(), "no error but values known once the step runs")
		})
		return nil
	}))
	assert.Greater(t, n, 30, "KubeVela ships some 35 step definitions with a template")
}

// TestUnsupportedActionFailsClearly: an action the schemas declare but
// oamflow does not run fails naming it.
func TestUnsupportedActionFailsClearly(t *testing.T) {
	comp, err := NewCompiler()
	require.NoError(t, err)
	_, err = comp.CompileString(context.Background(), "import \"vela/query\"\nc: query.#CollectServiceEndpoints & {$params: app: {name: \"a\", namespace: \"default\"}}\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query.#CollectServiceEndpoints is not supported by oamflow")
}

// TestKubeVelaUnsupportedActionFailsTheStep: KubeVela's
// collect-service-endpoints step (vela/query, not run by oamflow) fails
// naming the action. (KubeVela's request, webhook and notification run:
// TestKubeVelaExternalStepsCallOnce.)
func TestKubeVelaUnsupportedActionFailsTheStep(t *testing.T) {
	wf := &appfile.Workflow{Mode: "StepByStep", SubStepMode: "DAG", Steps: []*appfile.WorkflowStep{
		{Name: "collect", Type: "collect-service-endpoints", Properties: map[string]any{}},
	}}
	h := newHarness(t, wf, Options{})
	withTemplates(h, map[string]string{"collect-service-endpoints": kubevelaStep(t, "collect-service-endpoints")})
	res := h.until(30*time.Second, finished)
	assert.Equal(t, wfv1alpha1.WorkflowStateFailed, res.Status.Status)
	require.NotEmpty(t, res.Status.Steps)
	assert.Contains(t, res.Status.Steps[0].Message, "query.#CollectServiceEndpoints is not supported by oamflow")
}
