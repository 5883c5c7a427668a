package revision

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// hashLen is the number of hex digits of a revision hash (64 bits): short
// enough for a label value, long enough that collisions among one
// Application's revisions do not happen in practice.
const hashLen = 16

// ignoredAnnotations are annotations that say how to operate an
// Application, not what to deploy; changing them neither makes a new
// revision nor is snapshotted.
var ignoredAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	v1beta1.AnnoRestartWorkflow:                        true,
}

// relevantLabels drops the shard label (sharding.LabelScheduledShardID):
// which controller reconciles an Application is not what it deploys, so
// moving it to another shard neither makes a new revision nor re-runs its
// workflow.
func relevantLabels(in map[string]string) map[string]string {
	if _, ok := in[sharding.LabelScheduledShardID]; !ok {
		return in
	}
	out := map[string]string{}
	for k, v := range in {
		if k != sharding.LabelScheduledShardID {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// appContent is the part of an Application a revision depends on.
type appContent struct {
	Labels      map[string]string       `json:"labels,omitempty"`
	Annotations map[string]string       `json:"annotations,omitempty"`
	Spec        v1beta1.ApplicationSpec `json:"spec"`
}

func contentOf(app *v1beta1.Application) appContent {
	return appContent{Labels: relevantLabels(app.Labels), Annotations: relevantAnnotations(app.Annotations), Spec: app.Spec}
}

// relevantAnnotations drops the operational annotations (ignoredAnnotations).
func relevantAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if ignoredAnnotations[k] {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// AppHash returns the content hash of what app asks to deploy: its spec,
// labels and annotations (without operational annotations such as
// app.oam.dev/restart-workflow), written canonically (sorted keys, no
// insignificant whitespace) so that equal content always hashes equal.
// The result is 16 lowercase hex digits.
func AppHash(app *v1beta1.Application) (string, error) {
	return hashOf(contentOf(app))
}

// Hash returns the content hash of a revision: the Application content
// (see AppHash) plus the spec of every definition it used. It is the value
// of the app.oam.dev/app-revision-hash label; two revisions with equal
// hashes render the same objects.
//
// sel is the label-selected placement the revision is made for
// (placement.Select): a member joining or leaving a selection makes a new
// revision, whose run deploys to the new set and whose garbage collection
// removes what the left member no longer gets. An Application selecting
// no cluster by labels hashes as before selections were recorded.
func Hash(app *v1beta1.Application, defs Definitions, sel placement.Selection) (string, error) {
	type content struct {
		App           appContent          `json:"app"`
		Components    map[string]any      `json:"components,omitempty"`
		Traits        map[string]any      `json:"traits,omitempty"`
		Policies      map[string]any      `json:"policies,omitempty"`
		WorkflowSteps map[string]any      `json:"workflowSteps,omitempty"`
		Placement     placement.Selection `json:"placement,omitempty"`
	}
	c := content{App: contentOf(app), Placement: sel}
	c.Components = specs(defs.Components, func(d v1beta1.ComponentDefinition) any { return d.Spec })
	c.Traits = specs(defs.Traits, func(d v1beta1.TraitDefinition) any { return d.Spec })
	c.Policies = specs(defs.Policies, func(d v1beta1.PolicyDefinition) any { return d.Spec })
	c.WorkflowSteps = specs(defs.WorkflowSteps, func(d v1beta1.WorkflowStepDefinition) any { return d.Spec })
	return hashOf(c)
}

func specs[T any](in map[string]T, spec func(T) any) map[string]any {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = spec(v)
	}
	return out
}

// hashOf hashes the canonical JSON of v.
func hashOf(v any) (string, error) {
	b, err := canonicalJSON(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:hashLen], nil
}

// canonicalJSON encodes v as JSON with object keys sorted and no
// whitespace. Raw JSON inside v (properties) is re-encoded too, so its
// formatting does not matter; numbers keep their exact text.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding revision content: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("decoding revision content: %w", err)
	}
	var buf bytes.Buffer
	writeCanonical(&buf, generic)
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			writeCanonical(buf, t[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonical(buf, e)
		}
		buf.WriteByte(']')
	case json.Number:
		buf.WriteString(t.String())
	default:
		b, _ := json.Marshal(t)
		buf.Write(b)
	}
}
