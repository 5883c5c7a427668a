package localcluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUpOptionsValidate(t *testing.T) {
	with := func(f func(*UpOptions)) UpOptions {
		o := DefaultUpOptions()
		f(&o)
		return o
	}
	cases := map[string]struct {
		reason string
		opts   UpOptions
		field  string
	}{
		"Defaults":      {reason: "the defaults are valid", opts: DefaultUpOptions()},
		"ThreeClusters": {reason: "a hub and two members", opts: with(func(o *UpOptions) { o.Clusters = 3 })},
		"NoCIDR":        {reason: "empty keeps kube-apiserver's default", opts: with(func(o *UpOptions) { o.ServiceCIDR = "" })},
		"FixedPort":     {reason: "a fixed hub port", opts: with(func(o *UpOptions) { o.APIServerPort = 6443 })},
		"ZeroClusters":  {reason: "at least the hub", opts: with(func(o *UpOptions) { o.Clusters = 0 }), field: "clusters"},
		"BadPrefix":     {reason: "prefix must be a DNS label start", opts: with(func(o *UpOptions) { o.NamePrefix = "Bad_" }), field: "name prefix"},
		"ZeroNodes":     {reason: "pods need a node", opts: with(func(o *UpOptions) { o.Nodes = 0 }), field: "nodes"},
		"TooManyNodes":  {reason: "bounded", opts: with(func(o *UpOptions) { o.Nodes = 5000 }), field: "nodes"},
		"NoTimeout":     {reason: "a zero timeout would fail at once", opts: with(func(o *UpOptions) { o.Timeout = 0 }), field: "timeout"},
		"NegTimeout":    {reason: "negative", opts: with(func(o *UpOptions) { o.Timeout = -time.Second }), field: "timeout"},
		"BadPort":       {reason: "ports are 16 bits", opts: with(func(o *UpOptions) { o.APIServerPort = 70000 }), field: "API server port"},
		"BadCIDR":       {reason: "not a CIDR", opts: with(func(o *UpOptions) { o.ServiceCIDR = "10.0.0.0" }), field: "service CIDR"},
		"HugeCIDR":      {reason: "kube-apiserver refuses ranges wider than /12", opts: with(func(o *UpOptions) { o.ServiceCIDR = "10.0.0.0/8" }), field: "service CIDR"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.field == "" {
				require.NoError(t, err, tc.reason)
				return
			}
			require.Error(t, err, tc.reason)
			assert.Contains(t, err.Error(), tc.field, "the message names the field")
		})
	}
}
