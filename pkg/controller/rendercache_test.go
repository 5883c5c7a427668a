package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/workflow"
)

func TestRenderCacheTake(t *testing.T) {
	af := &appfile.AppFile{Components: []*appfile.Component{{Name: "web", Properties: map[string]any{"image": "nginx"}}, {Name: "bare"}}}
	other := &appfile.AppFile{Components: af.Components}
	cases := []struct {
		reason string
		af     *appfile.AppFile
		req    workflow.ComponentRequest
		hit    bool
	}{
		{"same properties, hub, app namespace", af, workflow.ComponentRequest{Name: "web", Properties: map[string]any{"image": "nginx"}}, true},
		{"no properties on either side", af, workflow.ComponentRequest{Name: "bare", Properties: map[string]any{}}, true},
		{"properties changed by an input or a step", af, workflow.ComponentRequest{Name: "web", Properties: map[string]any{"image": "nginx:2"}}, false},
		{"another cluster", af, workflow.ComponentRequest{Name: "web", Cluster: "east", Properties: map[string]any{"image": "nginx"}}, false},
		{"another namespace", af, workflow.ComponentRequest{Name: "web", Namespace: "prod", Properties: map[string]any{"image": "nginx"}}, false},
		{"another AppFile (a deploy target's)", other, workflow.ComponentRequest{Name: "web", Properties: map[string]any{"image": "nginx"}}, false},
		{"unknown component", af, workflow.ComponentRequest{Name: "nope"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			c := newRenderCache(af)
			c.put("web", []render.Resource{{Component: "web"}})
			c.put("bare", []render.Resource{{Component: "bare"}})
			res, ok := c.take(tc.af, tc.req)
			assert.Equal(t, tc.hit, ok)
			if ok {
				assert.Equal(t, tc.req.Name, res[0].Component)
				_, again := c.take(tc.af, tc.req)
				assert.False(t, again, "handed out once")
			}
		})
	}
	var none *renderCache
	_, ok := none.take(af, workflow.ComponentRequest{Name: "web"})
	assert.False(t, ok, "no cache, no hit")
}
