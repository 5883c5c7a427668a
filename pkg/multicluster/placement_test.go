package multicluster

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
)

func TestValidateTopologies(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	join(t, r, "east-1", map[string]string{"region": "east"})
	policy := func(name, typ, props string) common.AppPolicy {
		return common.AppPolicy{Name: name, Type: typ, Properties: &runtime.RawExtension{Raw: []byte(props)}}
	}
	cases := []struct {
		reason   string
		policies []common.AppPolicy
		want     []string // substrings of the error; nil: no error
	}{
		{"registered clusters and the hub", []common.AppPolicy{policy("t", "topology", `{"clusters":["east-1","local"]}`)}, nil},
		{"a selector is not checked here", []common.AppPolicy{policy("t", "topology", `{"clusterLabelSelector":{"region":"north"}}`)}, nil},
		{"other policy types are ignored", []common.AppPolicy{policy("o", "override", `{"clusters":["nope"]}`)}, nil},
		{
			"every unknown name with its field path",
			[]common.AppPolicy{
				policy("ok", "topology", `{"clusters":["east-1"]}`),
				policy("bad", "topology", `{"clusters":["east-1","west-9","mars"]}`),
			},
			[]string{`spec.policies[1].properties.clusters[1]: "west-9"`, `spec.policies[1].properties.clusters[2]: "mars"`, `clusters "mars", "west-9" not registered`},
		},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			err := r.ValidateTopologies(ctx, c.policies)
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrClusterNotFound))
			for _, s := range c.want {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}
