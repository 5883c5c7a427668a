package resourcekeeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// TestPreviewGCIsGarbageCollect previews, then runs, the collection of a
// ConfigMap a second revision drops: the preview says what the
// collection then does, whatever the garbage-collect policy, the
// Application's finalizers or the tracker entry say.
func TestPreviewGCIsGarbageCollect(t *testing.T) {
	cases := []struct {
		reason string
		app    func(*v1beta1.Application)
		pol    Policies
		// skipGC marks the dropped object's entry in revision 1's tracker.
		skipGC bool
		// want is the preview's action ("": not listed) and what the
		// collection does with the object: "deleted", "orphaned"
		// (without our labels) or "kept" (as it is).
		want, outcome string
	}{
		{reason: "no policy: deleted", want: "delete", outcome: "deleted"},
		{reason: "strategy never keeps it", want: "keep", outcome: "kept",
			pol: Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{Selector: ResourceSelector{ResourceNames: []string{"dropped"}}, Strategy: GCNever}}}}},
		{reason: "strategy onAppDelete keeps it", want: "keep", outcome: "kept",
			pol: Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{Selector: ResourceSelector{ComponentNames: []string{"old"}}, Strategy: GCOnAppDelete}}}}},
		{reason: "a rule selecting something else does not keep it", want: "delete", outcome: "deleted",
			pol: Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{Selector: ResourceSelector{ResourceTypes: []string{"Secret"}}, Strategy: GCNever}}}}},
		{reason: "keepLegacyResource keeps it", want: "keep", outcome: "kept",
			pol: Policies{GarbageCollect: &GarbageCollectPolicy{KeepLegacyResource: true}}},
		{reason: "propagation orphan orphans it", want: "orphan", outcome: "orphaned",
			pol: Policies{GarbageCollect: &GarbageCollectPolicy{Rules: []GarbageCollectRule{{Selector: ResourceSelector{ResourceTypes: []string{"ConfigMap"}}, Propagation: GCPropagationOrphan}}}}},
		{reason: "the orphan-resource finalizer orphans it", want: "orphan", outcome: "orphaned",
			app: func(a *v1beta1.Application) { a.Finalizers = []string{v1beta1.FinalizerOrphanResource} }},
		{reason: "a skipGC entry is never collected", skipGC: true, want: "", outcome: "kept"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			mods := []func(*v1beta1.Application){}
			if tc.app != nil {
				mods = append(mods, tc.app)
			}
			app := f.app("shop", mods...)
			require.NoError(t, f.keeper(app, 1, tc.pol).Apply(t.Context(), "", objs(configMap(app, 1, "web", "web"), configMap(app, 1, "old", "dropped"))))
			if tc.skipGC {
				rt := f.tracker(VersionedTrackerName("shop", f.ns, 1))
				for i := range rt.Spec.ManagedResources {
					if rt.Spec.ManagedResources[i].Name == "dropped" {
						rt.Spec.ManagedResources[i].SkipGC = true
					}
				}
				require.NoError(t, env.Client.Update(t.Context(), rt))
			}

			k2 := f.keeper(app, 2, tc.pol)
			rev2 := objs(configMap(app, 2, "web", "web"))
			keep := []common.ClusterObjectReference{refOf("", rev2[0])}
			preview, err := k2.PreviewGC(t.Context(), keep)
			require.NoError(t, err)
			got := ""
			for _, ch := range preview {
				require.Equal(t, "dropped", ch.Object.Name, "only the dropped object is collected")
				got = string(ch.Action)
			}
			assert.Equal(t, tc.want, got, "the preview")

			require.NoError(t, k2.Apply(t.Context(), "", rev2))
			_, err = k2.GarbageCollect(t.Context())
			require.NoError(t, err)
			live := f.get("v1", "ConfigMap", "dropped")
			outcome := "deleted"
			switch {
			case live == nil:
			case live.GetLabels()[v1beta1.LabelAppName] == "shop":
				outcome = "kept"
			default:
				outcome = "orphaned"
			}
			assert.Equal(t, tc.outcome, outcome, "the collection")
		})
	}
}
