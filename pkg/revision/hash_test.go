package revision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/placement"
)

// unmemoizedCanonical is the canonical content Hash encoded before it was
// assembled from parts: the whole content as one value, through
// canonicalJSON. It is the reference Hash and Hasher must match byte for
// byte, or every Application gets a new revision on upgrade.
func unmemoizedCanonical(t testing.TB, app *v1beta1.Application, defs Definitions, sel placement.Selection) []byte {
	t.Helper()
	type content struct {
		App           appContent          `json:"app"`
		Components    map[string]any      `json:"components,omitempty"`
		Traits        map[string]any      `json:"traits,omitempty"`
		Policies      map[string]any      `json:"policies,omitempty"`
		WorkflowSteps map[string]any      `json:"workflowSteps,omitempty"`
		Placement     placement.Selection `json:"placement,omitempty"`
	}
	c := content{App: contentOf(app), Placement: sel}
	c.Components = oldSpecs(defs.Components, func(d v1beta1.ComponentDefinition) any { return d.Spec })
	c.Traits = oldSpecs(defs.Traits, func(d v1beta1.TraitDefinition) any { return d.Spec })
	c.Policies = oldSpecs(defs.Policies, func(d v1beta1.PolicyDefinition) any { return d.Spec })
	c.WorkflowSteps = oldSpecs(defs.WorkflowSteps, func(d v1beta1.WorkflowStepDefinition) any { return d.Spec })
	b, err := canonicalJSON(c)
	require.NoError(t, err)
	return b
}

func oldSpecs[T any](in map[string]T, spec func(T) any) map[string]any {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = spec(v)
	}
	return out
}

func unmemoizedHash(t testing.TB, app *v1beta1.Application, defs Definitions, sel placement.Selection) string {
	t.Helper()
	sum := sha256.Sum256(unmemoizedCanonical(t, app, defs, sel))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// canonicalOf is the canonical content h writes for the inputs.
func canonicalOf(t testing.TB, h *Hasher, app *v1beta1.Application, defs Definitions, sel placement.Selection) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, h.writeContent(&buf, app, &defs, sel))
	return buf.Bytes()
}

// remembered is the number of definitions h remembers.
func (h *Hasher) remembered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.specs)
}

// The hashes of hashCases as the controller computed them before Hasher:
// a change here makes every Application a new revision on upgrade.
func TestHashIsUnchanged(t *testing.T) {
	want := map[string]string{
		"an app without definitions or selection":                    "78b00b337102f3d8",
		"labels, annotations and raw properties, no definitions":     "584ce72aafd0bced",
		"every kind of definition, several of each, and a selection": "e3c95f60bc801491",
		"every kind of definition without a selection":               "c04c0348d373ea8a",
		"an empty selection is left out like none":                   "c04c0348d373ea8a",
		"only traits: the absent kinds are left out":                 "d9b75f84ce599c9b",
		"only workflow steps and policies, with a selection":         "8ce26cd96dfa9f4b",
		"empty maps are left out like absent ones":                   "78b00b337102f3d8",
		"keys needing escapes, non-ASCII keys and an empty spec":     "5b1df0be37ba0869",
		"keys that are not valid UTF-8":                              "5b3a138fd538048d",
	}
	h := NewHasher(0)
	for _, tc := range hashCases(t) {
		require.Contains(t, want, tc.reason)
		got, err := Hash(tc.app, tc.defs, tc.sel)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, want[tc.reason], got, "%s: Hash", tc.reason)
		for i := 0; i < 2; i++ {
			got, err = h.Hash(tc.app, tc.defs, tc.sel)
			require.NoError(t, err, tc.reason)
			assert.Equal(t, want[tc.reason], got, "%s: Hasher.Hash, call %d", tc.reason, i+1)
		}
	}
	got, err := h.Hash(richApp(), builtinDefs(t), nil)
	require.NoError(t, err)
	assert.Equal(t, "0973b89700cfc1c9", got, "the built-in definitions")
}

func TestHasherMatchesUnmemoized(t *testing.T) {
	shared := NewHasher(0)
	cases := append(hashCases(t), hashCase{reason: "the built-in definitions", app: richApp(), defs: builtinDefs(t), sel: placement.Selection{"topo": {"east"}}})
	for _, tc := range cases {
		want := unmemoizedCanonical(t, tc.app, tc.defs, tc.sel)
		assert.Equal(t, string(want), string(canonicalOf(t, nil, tc.app, tc.defs, tc.sel)), "%s: the plain path", tc.reason)
		own := NewHasher(0)
		for i := 0; i < 2; i++ {
			assert.Equal(t, string(want), string(canonicalOf(t, own, tc.app, tc.defs, tc.sel)), "%s: a Hasher of its own, call %d", tc.reason, i+1)
			assert.Equal(t, string(want), string(canonicalOf(t, shared, tc.app, tc.defs, tc.sel)), "%s: a Hasher shared by every case, call %d", tc.reason, i+1)
		}
		wantHash := unmemoizedHash(t, tc.app, tc.defs, tc.sel)
		got, err := Hash(tc.app, tc.defs, tc.sel)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, wantHash, got, "%s: Hash", tc.reason)
		got, err = own.Hash(tc.app, tc.defs, tc.sel)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, wantHash, got, "%s: Hasher.Hash", tc.reason)
	}
	assert.Positive(t, shared.remembered(), "stored definitions are remembered")
}

// A definition changed in the cluster is a new version: the Hasher must
// encode it again, never answer with what it remembers of the old one.
func TestHasherForgetsChangedDefinitions(t *testing.T) {
	app := newApp()
	v1 := stored(compDef("webservice", "output: {kind: \"Deployment\"}"), "u1", "10")
	cases := []struct {
		reason string
		next   client.Object
	}{
		{"a new resourceVersion with another template", stored(compDef("webservice", "output: {kind: \"StatefulSet\"}"), "u1", "11")},
		{"a new resourceVersion with another spec field", func() client.Object {
			d := stored(compDef("webservice", "output: {kind: \"Deployment\"}"), "u1", "11")
			d.Spec.PodSpecPath = "spec.template.spec"
			return d
		}()},
		{"deleted and created again (another UID)", stored(compDef("webservice", "output: {kind: \"Job\"}"), "u2", "10")},
		{"the same name in another namespace", func() client.Object {
			d := stored(compDef("webservice", "output: {kind: \"Job\"}"), "u3", "10")
			d.Namespace = "default"
			return d
		}()},
	}
	for _, tc := range cases {
		h := NewHasher(0)
		old := defsOf(t, map[string]client.Object{"webservice": v1.DeepCopy()})
		h1, err := h.Hash(app, old, nil)
		require.NoError(t, err, tc.reason)
		require.Equal(t, 1, h.remembered(), tc.reason)

		next := defsOf(t, map[string]client.Object{"webservice": tc.next})
		h2, err := h.Hash(app, next, nil)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, unmemoizedHash(t, app, next, nil), h2, "%s: the new version is encoded", tc.reason)
		assert.NotEqual(t, h1, h2, "%s: and hashes differently", tc.reason)

		again, err := h.Hash(app, old, nil)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, h1, again, "%s: the old version still hashes as before", tc.reason)
	}
}

// Definitions made in memory, served for a pin or read back from a
// revision carry no version whose content is fixed: they are encoded at
// every call, so a change of their content is always seen.
func TestHasherEncodesUnstoredDefinitions(t *testing.T) {
	app := newApp()
	rev := Snapshot(app, defsOf(t, map[string]client.Object{"webservice": stored(compDef("webservice", "output: {}"), "u1", "1")}), 1, "h")
	cases := []struct {
		reason string
		defs   func() Definitions
	}{
		{"no UID", func() Definitions {
			return defsOf(t, map[string]client.Object{"webservice": stored(compDef("webservice", "output: {}"), "", "1")})
		}},
		{"no resourceVersion", func() Definitions {
			return defsOf(t, map[string]client.Object{"webservice": stored(compDef("webservice", "output: {}"), "u1", "")})
		}},
		{"pinned: a DefinitionRevision's copy", func() Definitions {
			return defsOf(t, map[string]client.Object{"webservice@v1": stored(compDef("webservice", "output: {}"), "u1", "1")})
		}},
		{"set in the maps, not with Add", func() Definitions {
			return Definitions{Components: map[string]v1beta1.ComponentDefinition{"webservice": *stored(compDef("webservice", "output: {}"), "u1", "1")}}
		}},
		{"read back from a revision", func() Definitions { return FromRevision(rev.DeepCopy()) }},
	}
	for _, tc := range cases {
		h := NewHasher(0)
		defs := tc.defs()
		_, err := h.Hash(app, defs, nil)
		require.NoError(t, err, tc.reason)
		assert.Zero(t, h.remembered(), "%s: nothing remembered", tc.reason)
		for k, d := range defs.Components {
			d.Spec.Schematic.CUE.Template = "output: {kind: \"Changed\"}"
			defs.Components[k] = d
		}
		got, err := h.Hash(app, defs, nil)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, unmemoizedHash(t, app, defs, nil), got, "%s: the edit is seen", tc.reason)
	}
}

// Adding an unstored object under a key that held a stored one forgets
// the stored version.
func TestAddForgetsReplacedVersions(t *testing.T) {
	app := newApp()
	h := NewHasher(0)
	defs := defsOf(t, map[string]client.Object{"webservice": stored(compDef("webservice", "output: {}"), "u1", "1")})
	_, err := h.Hash(app, defs, nil)
	require.NoError(t, err)
	require.NoError(t, defs.Add("webservice", compDef("webservice", "output: {kind: \"Job\"}")))
	got, err := h.Hash(app, defs, nil)
	require.NoError(t, err)
	assert.Equal(t, unmemoizedHash(t, app, defs, nil), got)
}

func TestRecorderRemembersStoredVersions(t *testing.T) {
	src := mapSource{
		"component/webservice":    {Kind: appfile.KindComponent, Name: "webservice", Object: stored(compDef("webservice", "output: {}"), "u1", "3")},
		"component/worker@v2":     {Kind: appfile.KindComponent, Name: "worker", Revision: 2, Object: stored(compDef("worker", "output: {}"), "u2", "4")},
		"trait/scaler":            {Kind: appfile.KindTrait, Name: "scaler", Object: traitDef("scaler", "patch: {}")},
		"workflow-step/deploy":    {Kind: appfile.KindWorkflowStep, Name: "deploy", Object: stored(stepDef("deploy", "parameter: {}"), "u3", "5")},
		"policy/garbage-collect":  {Kind: appfile.KindPolicy, Name: "garbage-collect", Object: stored(policyDef("garbage-collect", "parameter: {}"), "u4", "6")},
		"component/not-a-version": {Kind: appfile.KindComponent, Name: "x", Object: stored(compDef("x", "output: {}"), "u5", "")},
	}
	rec := NewRecorder(src)
	for key := range src {
		kind, name, _ := strings.Cut(key, "/")
		_, err := rec.Get(context.Background(), appfile.DefinitionKind(kind), name)
		require.NoError(t, err, key)
	}
	defs, err := rec.Definitions()
	require.NoError(t, err)
	cases := []struct {
		reason string
		kind   appfile.DefinitionKind
		key    string
		want   bool
	}{
		{"a stored component", appfile.KindComponent, "webservice", true},
		{"a pinned component", appfile.KindComponent, "worker@v2", false},
		{"a built-in trait (no UID)", appfile.KindTrait, "scaler", false},
		{"a stored workflow step", appfile.KindWorkflowStep, "deploy", true},
		{"a stored policy", appfile.KindPolicy, "garbage-collect", true},
		{"an object without resourceVersion", appfile.KindComponent, "not-a-version", false},
	}
	for _, tc := range cases {
		_, ok := defs.versions[entryKey{tc.kind, tc.key}]
		assert.Equal(t, tc.want, ok, tc.reason)
	}
	assert.Empty(t, defs.Components["webservice"].UID, "the entries keep no server-set metadata")
	assert.Empty(t, defs.Components["webservice"].ResourceVersion, "the entries keep no server-set metadata")

	h := NewHasher(0)
	got, err := h.Hash(newApp(), defs, nil)
	require.NoError(t, err)
	assert.Equal(t, unmemoizedHash(t, newApp(), defs, nil), got)
	assert.Equal(t, 3, h.remembered())
}

func TestHasherIsBounded(t *testing.T) {
	app := newApp()
	h := NewHasher(4)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("def-%d", i)
		defs := defsOf(t, map[string]client.Object{name: stored(compDef(name, "output: {}"), "u-"+name, "1")})
		got, err := h.Hash(app, defs, nil)
		require.NoError(t, err)
		assert.Equal(t, unmemoizedHash(t, app, defs, nil), got, name)
		assert.LessOrEqual(t, h.remembered(), 4, name)
	}
	assert.Equal(t, DefaultHasherSize, NewHasher(0).size)
}

// Reconcile workers share one Hasher (run with -race).
func TestHasherIsSafeForConcurrentUse(t *testing.T) {
	h := NewHasher(3)
	cases := hashCases(t)
	want := make([]string, len(cases))
	for i, tc := range cases {
		want[i] = unmemoizedHash(t, tc.app, tc.defs, tc.sel)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 20; r++ {
				for i, tc := range cases {
					got, err := h.Hash(tc.app, tc.defs, tc.sel)
					if !assert.NoError(t, err, tc.reason) || !assert.Equal(t, want[i], got, tc.reason) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkHash hashes an Application using ten built-in definitions
// (templates of a few KB), as every reconcile does: "unmemoized" is the
// hash as computed before Hasher, "Hash" the plain path, "Hasher" the
// controller's (every definition remembered after the first call).
func BenchmarkHash(b *testing.B) {
	app, defs := richApp(), builtinDefs(b)
	b.Run("unmemoized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			unmemoizedHash(b, app, defs, nil)
		}
	})
	b.Run("Hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Hash(app, defs, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Hasher", func(b *testing.B) {
		h := NewHasher(0)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Hash(app, defs, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
