package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// RecorderPath is where the mutating webhook (Recorder) is served.
const RecorderPath = "/mutate-core-oam-dev-v1beta1-application"

// Recorder is the mutating admission handler recording who wrote an
// Application, in KubeVela's annotations: app.oam.dev/username (the
// requester's user name) and app.oam.dev/group (its groups, comma
// separated). They are set when the Application is created and whenever
// its spec changes; an update that leaves the spec alone (labels,
// finalizers, the controller's own writes) keeps the recorded writer, and
// a hand-written change of either annotation is undone, so the record
// holds as long as the webhook runs. oamflow never acts as the recorded
// user: it is a record for people (`kubectl get app -o yaml`, audits) and
// for what the Application's identity is checked against at admission.
//
// With Shards (the master shard of a sharded controller), it also gives
// every Application without the label controller.core.oam.dev/scheduled-shard-id
// a shard (sharding.Scheduler), and an update that drops the label keeps
// the old one: moving an Application is changing the label's value.
type Recorder struct {
	Shards *sharding.Scheduler
}

// Handle implements admission.Handler.
func (r *Recorder) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	app, err := decodeMeta(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the Application: %w", err))
	}
	want := writerAnnotations(req.UserInfo)
	var old decodedMeta
	if req.Operation == admissionv1.Update {
		if old, err = decodeMeta(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old Application: %w", err))
		}
		if equality.Semantic.DeepEqual(old.Spec, app.Spec) {
			want = map[string]*string{
				v1beta1.AnnoUsername: annotation(old.Annotations, v1beta1.AnnoUsername),
				v1beta1.AnnoGroup:    annotation(old.Annotations, v1beta1.AnnoGroup),
			}
		}
	}
	ops := annotationPatch(app.Annotations, want)
	if r.Shards != nil {
		ops = append(ops, r.shardPatch(old.Labels, app.Labels)...)
	}
	return admission.Patched("", ops...)
}

// shardPatch labels an Application without a shard: the old one's shard
// on an update that dropped it, else the Scheduler's choice (none when it
// has no shard to offer: the master's Supervisor tells the Application).
func (r *Recorder) shardPatch(old, have map[string]string) []jsonpatch.JsonPatchOperation {
	if have[sharding.LabelScheduledShardID] != "" {
		return nil
	}
	id := old[sharding.LabelScheduledShardID]
	if id == "" {
		o := &metav1.ObjectMeta{}
		var ok bool
		if id, ok = r.Shards.Schedule(o); !ok {
			return nil
		}
	}
	if have == nil {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{sharding.LabelScheduledShardID: id})}
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/labels/"+escapePointer(sharding.LabelScheduledShardID), id)}
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// writerAnnotations are the recorded annotations for user.
func writerAnnotations(user authenticationv1.UserInfo) map[string]*string {
	name, groups := user.Username, strings.Join(user.Groups, ",")
	return map[string]*string{v1beta1.AnnoUsername: &name, v1beta1.AnnoGroup: &groups}
}

func annotation(m map[string]string, k string) *string {
	if v, ok := m[k]; ok {
		return &v
	}
	return nil
}

// annotationPatch returns the JSON patch operations that make the
// annotations have want's values (nil: absent), in key order.
func annotationPatch(have map[string]string, want map[string]*string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	keys := []string{v1beta1.AnnoUsername, v1beta1.AnnoGroup}
	if have == nil {
		add := map[string]string{}
		for _, k := range keys {
			if v := want[k]; v != nil {
				add[k] = *v
			}
		}
		if len(add) == 0 {
			return nil
		}
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/annotations", add)}
	}
	for _, k := range keys {
		path := "/metadata/annotations/" + escapePointer(k)
		cur, ok := have[k]
		switch v := want[k]; {
		case v == nil && ok:
			ops = append(ops, jsonpatch.NewOperation("remove", path, nil))
		case v != nil && !ok:
			ops = append(ops, jsonpatch.NewOperation("add", path, *v))
		case v != nil && cur != *v:
			ops = append(ops, jsonpatch.NewOperation("replace", path, *v))
		}
	}
	return ops
}

// appMeta is the part of an Application the Recorder reads: decoding
// only this keeps every other field as the user wrote it.
type appMeta struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

type decodedMeta struct {
	Annotations map[string]string
	Labels      map[string]string
	Spec        any
}

func decodeMeta(raw []byte) (decodedMeta, error) {
	var m appMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return decodedMeta{}, err
	}
	var spec any
	if len(m.Spec) > 0 {
		if err := json.Unmarshal(m.Spec, &spec); err != nil {
			return decodedMeta{}, err
		}
	}
	return decodedMeta{Annotations: m.Metadata.Annotations, Labels: m.Metadata.Labels, Spec: spec}, nil
}
