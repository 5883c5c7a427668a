package appfile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/cuex"
)

// portsDef checks its ports pairwise, as webservice's checks do: cheap
// for a few ports, quadratic for many.
const portsDef = `ports: {
	type: "component"
	attributes: workload: definition: {apiVersion: "apps/v1", kind: "Deployment"}
}
template: {
	parameter: ports: [...{port: int}]
	_clash: [for i, a in parameter.ports for j, b in parameter.ports if i < j && a.port == b.port {a.port}]
	parameter: _noClash: len(_clash) & 0
	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: ports: [for p in parameter.ports {containerPort: p.port}]
	}
}
`

func portsApp(t *testing.T, ns string, n int) *v1beta1.Application {
	t.Helper()
	ports := make([]string, n)
	for i := range ports {
		ports[i] = fmt.Sprintf("{port: %d}", i+1)
	}
	doc := fmt.Sprintf("apiVersion: core.oam.dev/v1beta1\nkind: Application\nmetadata: {name: app, namespace: %s}\nspec:\n  components: [{name: web, type: ports, properties: {ports: [%s]}}]\n"+suspendOnly, ns, strings.Join(ports, ","))
	a := &v1beta1.Application{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), a))
	return a
}

// One Application whose input makes the evaluation time out fails alone:
// others using the same definition on the same (shared) Engine, in other
// namespaces, validate before and after it, and it fails again on its own
// next attempt with its own error (not "does not compile").
func TestEvaluationTimeoutIsTheApplications(t *testing.T) {
	src, err := NewFSSource(fstest.MapFS{"defs/ports.cue": {Data: []byte(portsDef)}}, "defs")
	require.NoError(t, err)
	ctx := WithEngine(context.Background(), cuex.NewEngine(cuex.WithLimits(cuex.Limits{Timeout: 300 * time.Millisecond})))

	_, _, err = Validate(ctx, portsApp(t, "team-b", 3), src, nil)
	require.NoError(t, err, "before")
	for attempt := 0; attempt < 2; attempt++ {
		_, _, err = Validate(ctx, portsApp(t, "team-a", 20000), src, nil)
		require.Error(t, err)
		errs := validationErrors(t, err)
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0], "spec.components[0].properties: ", "the failure is the component's properties'")
		assert.Contains(t, errs[0], "did not finish within 300ms")
		assert.NotContains(t, errs[0], "does not compile")

		_, _, err = Validate(ctx, portsApp(t, "team-b", 3), src, nil)
		require.NoError(t, err, "after attempt %d: another Application using the same definition is not affected", attempt)
		_, _, err = Validate(ctx, portsApp(t, "team-c", 4), src, nil)
		require.NoError(t, err, "after attempt %d: nor one with another input", attempt)
	}
}
