package revision

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
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
//
// The hash is that of the canonical JSON (see canonicalJSON) of
//
//	{"app": <app content>, "components": {<key>: <spec>, ...}, "traits": ...,
//	 "policies": ..., "workflowSteps": ..., "placement": <sel>}
//
// where a kind without definitions and an empty sel are left out. A
// Hasher returns the same hash, reusing the canonical JSON of the specs.
func Hash(app *v1beta1.Application, defs Definitions, sel placement.Selection) (string, error) {
	return (*Hasher)(nil).Hash(app, defs, sel)
}

// DefaultHasherSize is the number of definitions a Hasher made with
// NewHasher(0) remembers.
const DefaultHasherSize = 2048

// Hasher computes Hash, remembering the canonical JSON of the definition
// specs it encoded, by kind, namespace and name, for the stored version
// (UID and resourceVersion) they were read from: definitions are few and
// their specs, whole CUE templates, are most of what a revision hash
// encodes, again at every reconcile of every Application using them. A
// definition whose version Definitions does not know (made in memory,
// served for a "name@vN" pin, or read back from a revision) is encoded
// each time. A Hasher remembers one version of each definition (another
// version replaces it) and at most its size of definitions, forgetting all
// when full. It is safe for concurrent use; the nil *Hasher remembers
// nothing.
type Hasher struct {
	size int

	mu    sync.Mutex
	specs map[specKey]specJSON
}

// specKey is a definition object: its kind, namespace and name.
type specKey struct {
	kind            appfile.DefinitionKind
	namespace, name string
}

// specJSON is the canonical JSON of the spec of one stored version of a
// definition.
type specJSON struct {
	uid             types.UID
	resourceVersion string
	json            []byte
}

// NewHasher returns a Hasher remembering at most size definitions
// (DefaultHasherSize when size ≤ 0).
func NewHasher(size int) *Hasher {
	if size <= 0 {
		size = DefaultHasherSize
	}
	return &Hasher{size: size, specs: map[specKey]specJSON{}}
}

// Hash returns what Hash(app, defs, sel) returns.
func (h *Hasher) Hash(app *v1beta1.Application, defs Definitions, sel placement.Selection) (string, error) {
	sum := sha256.New()
	if err := h.writeContent(sum, app, &defs, sel); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil))[:hashLen], nil
}

// writeContent writes the canonical JSON of a revision's content (see
// Hash) to w, assembled from the canonical JSON of its parts: writing an
// object's members with sorted keys, each value canonical, is what
// canonicalJSON does with the whole. Keys that are not valid UTF-8 (which
// encoding/json rewrites before sorting) make it encode the whole instead.
func (h *Hasher) writeContent(w io.Writer, app *v1beta1.Application, defs *Definitions, sel placement.Selection) error {
	if !validKeys(defs.Components) || !validKeys(defs.Traits) || !validKeys(defs.Policies) || !validKeys(defs.WorkflowSteps) {
		b, err := canonicalJSON(wholeContent(app, defs, sel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	ew := &errWriter{w: w}
	appJSON, err := canonicalJSON(contentOf(app))
	if err != nil {
		return err
	}
	// The members in the order of their sorted keys.
	ew.str(`{"app":`)
	ew.bytes(appJSON)
	if err := writeSpecs(ew, h, `,"components":`, appfile.KindComponent, defs, defs.Components, componentParts); err != nil {
		return err
	}
	if len(sel) > 0 {
		selJSON, err := canonicalJSON(sel)
		if err != nil {
			return err
		}
		ew.str(`,"placement":`)
		ew.bytes(selJSON)
	}
	if err := writeSpecs(ew, h, `,"policies":`, appfile.KindPolicy, defs, defs.Policies, policyParts); err != nil {
		return err
	}
	if err := writeSpecs(ew, h, `,"traits":`, appfile.KindTrait, defs, defs.Traits, traitParts); err != nil {
		return err
	}
	if err := writeSpecs(ew, h, `,"workflowSteps":`, appfile.KindWorkflowStep, defs, defs.WorkflowSteps, stepParts); err != nil {
		return err
	}
	ew.str(`}`)
	return ew.err
}

// wholeContent is a revision's content as one value (see Hash).
func wholeContent(app *v1beta1.Application, defs *Definitions, sel placement.Selection) any {
	type content struct {
		App           appContent          `json:"app"`
		Components    map[string]any      `json:"components,omitempty"`
		Traits        map[string]any      `json:"traits,omitempty"`
		Policies      map[string]any      `json:"policies,omitempty"`
		WorkflowSteps map[string]any      `json:"workflowSteps,omitempty"`
		Placement     placement.Selection `json:"placement,omitempty"`
	}
	return content{
		App:           contentOf(app),
		Components:    specs(defs.Components, componentParts),
		Traits:        specs(defs.Traits, traitParts),
		Policies:      specs(defs.Policies, policyParts),
		WorkflowSteps: specs(defs.WorkflowSteps, stepParts),
		Placement:     sel,
	}
}

// The parts of each kind of definition a revision hash depends on: the
// spec, as a value (as wholeContent holds it), and the metadata naming
// the object it was read from.
func componentParts(d *v1beta1.ComponentDefinition) (*metav1.ObjectMeta, any) {
	return &d.ObjectMeta, d.Spec
}

func traitParts(d *v1beta1.TraitDefinition) (*metav1.ObjectMeta, any) {
	return &d.ObjectMeta, d.Spec
}

func policyParts(d *v1beta1.PolicyDefinition) (*metav1.ObjectMeta, any) {
	return &d.ObjectMeta, d.Spec
}

func stepParts(d *v1beta1.WorkflowStepDefinition) (*metav1.ObjectMeta, any) {
	return &d.ObjectMeta, d.Spec
}

func specs[T any](in map[string]T, parts func(*T) (*metav1.ObjectMeta, any)) map[string]any {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		_, out[k] = parts(&v)
	}
	return out
}

// validKeys reports whether every key of in is valid UTF-8.
func validKeys[T any](in map[string]T) bool {
	for k := range in {
		if !utf8.ValidString(k) {
			return false
		}
	}
	return true
}

// writeSpecs writes member, then the object of the canonical JSON of the
// specs in by key, sorted; nothing when in is empty (omitempty).
func writeSpecs[T any](w *errWriter, h *Hasher, member string, kind appfile.DefinitionKind, defs *Definitions, in map[string]T, parts func(*T) (*metav1.ObjectMeta, any)) error {
	if len(in) == 0 {
		return nil
	}
	w.str(member)
	w.str("{")
	for i, k := range slices.Sorted(maps.Keys(in)) {
		if i > 0 {
			w.str(",")
		}
		w.bytes(canonicalKey(k))
		w.str(":")
		d := in[k]
		meta, spec := parts(&d)
		b, err := h.spec(kind, k, defs, meta, spec)
		if err != nil {
			return err
		}
		w.bytes(b)
	}
	w.str("}")
	return nil
}

// spec returns the canonical JSON of spec, the spec of entry kind/key of
// defs, whose metadata is meta: the remembered one when defs says which
// stored version it is and h has it, else encoded (and remembered).
func (h *Hasher) spec(kind appfile.DefinitionKind, key string, defs *Definitions, meta *metav1.ObjectMeta, spec any) ([]byte, error) {
	if h == nil {
		return canonicalJSON(spec)
	}
	v, ok := defs.version(kind, key, meta)
	if !ok {
		return canonicalJSON(spec)
	}
	sk := specKey{kind: kind, namespace: v.namespace, name: v.name}
	h.mu.Lock()
	e, hit := h.specs[sk]
	h.mu.Unlock()
	if hit && e.uid == v.uid && e.resourceVersion == v.resourceVersion {
		return e.json, nil
	}
	b, err := canonicalJSON(spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.specs[sk]; !ok && len(h.specs) >= h.size {
		clear(h.specs)
	}
	h.specs[sk] = specJSON{uid: v.uid, resourceVersion: v.resourceVersion, json: b}
	return b, nil
}

// errWriter writes until the first error, which it keeps.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *errWriter) str(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
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

// canonicalKey is an object member's key as canonical JSON writes it,
// whole documents (writeCanonical) and documents assembled from parts
// (writeSpecs) alike: members in sorted key order, each key a JSON string.
func canonicalKey(k string) []byte {
	b, _ := json.Marshal(k) // a string always encodes
	return b
}

func writeCanonical(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case map[string]any:
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(canonicalKey(k))
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
