package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/oamflow/oamflow/pkg/sharding"
)

func TestRecorder(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a", "system:authenticated"}}
	spec := func(image string) string {
		return `"spec":{"components":[{"name":"web","type":"webservice","properties":{"image":"` + image + `"}}]}`
	}
	app := func(annotations, spec string) []byte {
		meta := `"metadata":{"name":"web","namespace":"team-a"}`
		if annotations != "" {
			meta = `"metadata":{"name":"web","namespace":"team-a","annotations":` + annotations + `}`
		}
		return []byte(`{"apiVersion":"core.oam.dev/v1beta1","kind":"Application",` + meta + `,` + spec + `}`)
	}
	recorded := `{"app.oam.dev/username":"bob","app.oam.dev/group":"team-b"}`
	cases := []struct {
		reason   string
		op       admissionv1.Operation
		old, obj []byte
		want     []jsonpatch.JsonPatchOperation
	}{
		{"a create without annotations records the writer", admissionv1.Create, nil, app("", spec("nginx")),
			[]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/annotations",
				map[string]any{"app.oam.dev/username": "alice", "app.oam.dev/group": "team-a,system:authenticated"})}},
		{"a create naming another writer is corrected", admissionv1.Create, nil, app(`{"app.oam.dev/username":"root","x":"y"}`, spec("nginx")),
			[]jsonpatch.JsonPatchOperation{
				jsonpatch.NewOperation("replace", "/metadata/annotations/app.oam.dev~1username", "alice"),
				jsonpatch.NewOperation("add", "/metadata/annotations/app.oam.dev~1group", "team-a,system:authenticated"),
			}},
		{"a spec change records the new writer", admissionv1.Update, app(recorded, spec("nginx")), app(recorded, spec("nginx:2")),
			[]jsonpatch.JsonPatchOperation{
				jsonpatch.NewOperation("replace", "/metadata/annotations/app.oam.dev~1username", "alice"),
				jsonpatch.NewOperation("replace", "/metadata/annotations/app.oam.dev~1group", "team-a,system:authenticated"),
			}},
		{"a metadata-only update keeps the recorded writer", admissionv1.Update, app(recorded, spec("nginx")), app(`{"app.oam.dev/username":"bob","app.oam.dev/group":"team-b","x":"y"}`, spec("nginx")),
			nil},
		{"a hand-written writer on a metadata-only update is undone", admissionv1.Update, app(recorded, spec("nginx")), app(`{"app.oam.dev/username":"root"}`, spec("nginx")),
			[]jsonpatch.JsonPatchOperation{
				jsonpatch.NewOperation("replace", "/metadata/annotations/app.oam.dev~1username", "bob"),
				jsonpatch.NewOperation("add", "/metadata/annotations/app.oam.dev~1group", "team-b"),
			}},
		{"a writer added by hand to an unrecorded Application is removed", admissionv1.Update, app("", spec("nginx")), app(`{"app.oam.dev/username":"root"}`, spec("nginx")),
			[]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", "/metadata/annotations/app.oam.dev~1username", nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op, UserInfo: alice,
				Object: runtime.RawExtension{Raw: tc.obj}, OldObject: runtime.RawExtension{Raw: tc.old},
			}}
			resp := (&Recorder{}).Handle(context.Background(), req)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, normalize(t, tc.want), normalize(t, resp.Patches))
		})
	}
}

// normalize compares patches as JSON (values decoded alike).
func normalize(t *testing.T, ops []jsonpatch.JsonPatchOperation) []any {
	t.Helper()
	if len(ops) == 0 {
		return nil
	}
	data, err := json.Marshal(ops)
	require.NoError(t, err)
	var out []any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

// TestRecorderSchedulesShards: with a Scheduler, new Applications get a
// shard in round-robin order; a labelled one keeps its label (a move is a
// change of its value); an update that drops the label keeps the old one.
func TestRecorderSchedulesShards(t *testing.T) {
	const key = "/metadata/labels/controller.core.oam.dev~1scheduled-shard-id"
	user := authenticationv1.UserInfo{Username: "alice"}
	app := func(labels string) []byte {
		meta := `"name":"web","namespace":"team-a","annotations":{"app.oam.dev/username":"alice","app.oam.dev/group":""}`
		if labels != "" {
			meta += `,"labels":` + labels
		}
		return []byte(`{"apiVersion":"core.oam.dev/v1beta1","kind":"Application","metadata":{` + meta + `},"spec":{"components":[]}}`)
	}
	rec := &Recorder{Shards: sharding.NewScheduler([]string{"shard-0", "shard-1"})}
	cases := []struct {
		reason   string
		op       admissionv1.Operation
		old, obj []byte
		want     []jsonpatch.JsonPatchOperation
	}{
		{"a new Application without labels goes to the first shard", admissionv1.Create, nil, app(""),
			[]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/labels", map[string]any{sharding.LabelScheduledShardID: "shard-0"})}},
		{"the next one to the second", admissionv1.Create, nil, app(`{"team":"a"}`),
			[]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", key, "shard-1")}},
		{"and round again", admissionv1.Create, nil, app(`{"team":"a"}`),
			[]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", key, "shard-0")}},
		{"a labelled Application keeps its shard", admissionv1.Create, nil, app(`{"controller.core.oam.dev/scheduled-shard-id":"shard-9"}`), nil},
		{"re-labelling moves it", admissionv1.Update, app(`{"controller.core.oam.dev/scheduled-shard-id":"shard-0"}`),
			app(`{"controller.core.oam.dev/scheduled-shard-id":"shard-1"}`), nil},
		{"dropping the label keeps the old shard", admissionv1.Update, app(`{"controller.core.oam.dev/scheduled-shard-id":"shard-1","team":"a"}`),
			app(`{"team":"a"}`), []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", key, "shard-1")}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op, UserInfo: user,
				Object: runtime.RawExtension{Raw: tc.obj}, OldObject: runtime.RawExtension{Raw: tc.old},
			}}
			resp := rec.Handle(context.Background(), req)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, normalize(t, tc.want), normalize(t, resp.Patches))
		})
	}
	t.Run("no shard to offer: no label, the Supervisor tells the Application", func(t *testing.T) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, UserInfo: user, Object: runtime.RawExtension{Raw: app("")}}}
		resp := (&Recorder{Shards: sharding.NewScheduler(nil)}).Handle(context.Background(), req)
		require.True(t, resp.Allowed)
		assert.Empty(t, resp.Patches)
	})
}
