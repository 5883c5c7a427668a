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
