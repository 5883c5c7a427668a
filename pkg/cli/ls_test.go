package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func TestFormatAppRowsGolden(t *testing.T) {
	apps := []v1beta1.Application{
		*fixtureApp(withPhase(common.ApplicationRunning), withServices(service("web", "", true, ""), service("web", "hz", true, ""), service("worker", "", false, ""))),
		*fixtureApp(func(a *v1beta1.Application) {
			a.Name, a.Namespace, a.CreationTimestamp = "api", "prod", ago(3*24*time.Hour)
			a.Spec.Components = []common.ApplicationComponent{{Name: "a-component-with-a-rather-long-name"}, {Name: "another-long-component-name"}}
		}, withPhase(common.ApplicationWorkflowFailed)),
		*fixtureApp(func(a *v1beta1.Application) { a.Name, a.CreationTimestamp = "new", ago(5*time.Second) }),
	}
	var b bytes.Buffer
	require.NoError(t, formatAppRows(&b, appRows(apps), goldenNow))
	assertGolden(t, "ls/apps.golden", b.String())
}

func TestAppRows(t *testing.T) {
	rows := appRows([]v1beta1.Application{
		*fixtureApp(func(a *v1beta1.Application) { a.Name, a.Namespace = "b", "x" }, withServices(service("web", "", true, ""), service("web", "hz", false, ""))),
		*fixtureApp(func(a *v1beta1.Application) { a.Name, a.Namespace = "a", "y" }),
		*fixtureApp(func(a *v1beta1.Application) { a.Name, a.Namespace = "c", "x" }),
	})
	var names []string
	for _, r := range rows {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	assert.Equal(t, []string{"x/b", "x/c", "y/a"}, names, "sorted by namespace, then name")
	assert.Equal(t, 1, rows[0].Healthy)
	assert.Equal(t, 2, rows[0].Services)
	assert.Equal(t, []string{"web", "worker"}, rows[0].Components)
}

func testLs(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	for _, app := range []*v1beta1.Application{
		{ObjectMeta: metav1.ObjectMeta{Name: "listed", Namespace: "other"}, Spec: v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "api", Type: "webservice"}}}},
	} {
		require.NoError(t, e.c.Create(ctx, app))
	}
	e.patchAppStatus(t, "other", "listed", func(a *v1beta1.Application) {
		a.Status.Phase = common.ApplicationRunning
		a.Status.Services = []common.ApplicationComponentStatus{{Name: "api", Healthy: true}, {Name: "api", Cluster: "hz", Healthy: false}}
	})

	r := e.run("", "ls", "-n", "other")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Regexp(t, `(?m)^NAME\s+NAMESPACE\s+COMPONENTS\s+PHASE\s+HEALTHY\s+AGE$`, r.out)
	assert.Regexp(t, `(?m)^listed\s+other\s+api\s+running\s+1/2\s+\S+$`, r.out)

	r = e.run("", "ls", "-A")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Contains(t, r.out, "listed")
	assert.Regexp(t, `(?m)^web\s+default\s`, r.out, "every namespace")

	r = e.run("", "ls", "-n", "oamflow-system")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Equal(t, "No Applications in namespace oamflow-system.\n", r.out)

	r = e.run("", "ls", "-n", "other", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.err)
	var rows []appRow
	require.NoError(t, json.Unmarshal([]byte(r.out), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, appRow{Name: "listed", Namespace: "other", Components: []string{"api"}, Phase: common.ApplicationRunning, Healthy: 1, Services: 2, Created: rows[0].Created}, rows[0])

	r = e.run("", "ls", "-o", "wide")
	assert.Equal(t, ExitUserError, r.code)
}
