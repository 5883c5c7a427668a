package resourcekeeper

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/multicluster"
)

// TestApplyStampsTheMemberCluster: an object applied to a member cluster
// carries app.oam.dev/cluster naming it (the hub's objects do not).
func TestApplyStampsTheMemberCluster(t *testing.T) {
	cases := []struct {
		reason  string
		cluster string
		want    string
	}{
		{"a member is named", "member-1", "member-1"},
		{"the hub is not labelled", "", ""},
		{"the hub by name is not labelled", "local", ""},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			f := newFixture(t)
			app := f.app("shop")
			// Every cluster name reaches the test API server.
			clients := multicluster.ClusterClientsFn(func(context.Context, string) (client.Client, error) { return f.c, nil })
			k, err := New(app, 1, Options{Clients: clients})
			require.NoError(t, err)
			require.NoError(t, k.Apply(f.ctx, c.cluster, objs(configMap(app, 1, "c", "cfg"))))
			live := f.get("v1", "ConfigMap", "cfg")
			require.NotNil(t, live)
			got, ok := live.GetLabels()[v1beta1.LabelAppCluster]
			assert.Equal(t, c.want != "", ok)
			assert.Equal(t, c.want, got)
		})
	}
}
