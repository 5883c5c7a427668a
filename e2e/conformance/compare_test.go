//go:build !e2e

package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The comparison follows the corpus's reference comparer (check.py in the
// corpus): objects keyed by apiVersion, kind, namespace and name, compared
// as a multiset per key after normalising (the offline
// app.oam.dev/appRevision label removed; empty maps, lists, strings and
// nulls dropped, recursively); YAML comments ignored; `WARNING: ...` lines
// compared as text.

// objKey identifies an object; a WARNING line has Kind "WARNING" and the
// line as Name.
type objKey struct{ APIVersion, Kind, Namespace, Name string }

func (k objKey) String() string {
	switch {
	case k == objKey{}:
		return "(document without apiVersion/kind/name)"
	case k.APIVersion == "" && k.Kind == "WARNING":
		return fmt.Sprintf("line %q", k.Name)
	case k.Namespace != "":
		return fmt.Sprintf("%s %s %s/%s", k.APIVersion, k.Kind, k.Namespace, k.Name)
	default:
		return fmt.Sprintf("%s %s %s", k.APIVersion, k.Kind, k.Name)
	}
}

// objects are the normalised objects of one output, by key.
type objects map[objKey][]any

func (o objects) count() int {
	n := 0
	for _, l := range o {
		n += len(l)
	}
	return n
}

// ignoredLabels are removed before comparing: offline, vela prints
// app.oam.dev/appRevision with an empty value, oamflow "<app>-v1".
var ignoredLabels = []string{"app.oam.dev/appRevision"}

// blockHeader is vela's comment opening a component's block:
// `# Application(<app> with topology <policy>) -- Component(<name>)`.
var blockHeader = regexp.MustCompile(`(?m)^# Application\((.*)\) -- (?:Component|Policy)\(`)

// parseOutput reads a dry-run's stdout. moveNS (deviation (b), may be nil)
// maps a topology policy name to the namespace the objects printed in its
// blocks are moved to (namespaced objects only: those with a namespace).
func parseOutput(text string, moveNS map[string]string) (objects, error) {
	objs := objects{}
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "WARNING:") {
			w := strings.TrimRight(line, " \t\r")
			k := objKey{Kind: "WARNING", Name: w}
			objs[k] = append(objs[k], w)
			continue
		}
		kept = append(kept, line)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(strings.Join(kept, "\n") + "\n")))
	topology := ""
	for i := 0; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if m := blockHeader.FindSubmatch(raw); m != nil {
			_, topology, _ = strings.Cut(string(m[1]), " with topology ")
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		doc = normalise(doc)
		if doc == nil {
			continue
		}
		if ns, ok := moveNS[topology]; ok && topology != "" {
			if meta, ok := doc.(map[string]any)["metadata"].(map[string]any); ok && meta["namespace"] != nil {
				meta["namespace"] = ns
			}
		}
		k := keyOf(doc)
		objs[k] = append(objs[k], doc)
	}
	return objs, nil
}

func normalise(doc any) any {
	if m, ok := doc.(map[string]any); ok {
		if meta, ok := m["metadata"].(map[string]any); ok {
			if labels, ok := meta["labels"].(map[string]any); ok {
				for _, l := range ignoredLabels {
					delete(labels, l)
				}
			}
		}
	}
	return prune(doc)
}

// prune drops empty maps, lists and strings and nulls, recursively; it
// returns nil when v itself is empty.
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if e = prune(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if x == "" {
			return nil
		}
		return x
	default:
		return v
	}
}

func keyOf(doc any) objKey {
	m, ok := doc.(map[string]any)
	if !ok {
		return objKey{}
	}
	str := func(v any) string {
		if v == nil {
			return ""
		}
		if s, ok := v.(string); ok {
			return s
		}
		return fmt.Sprint(v)
	}
	meta, _ := m["metadata"].(map[string]any)
	return objKey{str(m["apiVersion"]), str(m["kind"]), str(meta["namespace"]), str(meta["name"])}
}

func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func short(v any, width int) string {
	s := canon(v)
	if len(s) <= width {
		return s
	}
	return s[:width-3] + "..."
}

// compare returns a compact path-level diff of want (vela) and got
// (oamflow); empty when they hold the same objects.
func compare(want, got objects) []string {
	keys := map[objKey]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]objKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].String() < sorted[j].String() })
	var lines []string
	for _, k := range sorted {
		e, a := sortedCanon(want[k]), sortedCanon(got[k])
		restA := slices.Clone(a)
		var restE []any
		for _, x := range e {
			cx := canon(x)
			if i := slices.IndexFunc(restA, func(y any) bool { return canon(y) == cx }); i >= 0 {
				restA = slices.Delete(restA, i, i+1)
			} else {
				restE = append(restE, x)
			}
		}
		if len(restE) == 0 && len(restA) == 0 {
			continue
		}
		if len(e) != len(a) {
			lines = append(lines, fmt.Sprintf("  %s: expected %d object(s), got %d", k, len(e), len(a)))
		}
		for i := 0; i < len(restE) && i < len(restA); i++ {
			if len(e) == len(a) {
				lines = append(lines, fmt.Sprintf("  %s: differs", k))
			}
			lines = pathDiff(restE[i], restA[i], "", lines)
		}
	}
	return lines
}

func sortedCanon(l []any) []any {
	out := slices.Clone(l)
	sort.SliceStable(out, func(i, j int) bool { return canon(out[i]) < canon(out[j]) })
	return out
}

func pathDiff(want, got any, path string, out []string) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			w, inW := wm[k]
			g, inG := gm[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("    - %s: %s", p, short(w, 60)))
			case !inW:
				out = append(out, fmt.Sprintf("    + %s: %s", p, short(g, 60)))
			default:
				out = pathDiff(w, g, p, out)
			}
		}
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok {
		for i := 0; i < len(wl) || i < len(gl); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(gl):
				out = append(out, fmt.Sprintf("    - %s: %s", p, short(wl[i], 60)))
			case i >= len(wl):
				out = append(out, fmt.Sprintf("    + %s: %s", p, short(gl[i], 60)))
			default:
				out = pathDiff(wl[i], gl[i], p, out)
			}
		}
		return out
	}
	if canon(want) != canon(got) {
		if path == "" {
			path = "."
		}
		out = append(out, fmt.Sprintf("    ~ %s: expected %s, got %s", path, short(want, 40), short(got, 40)))
	}
	return out
}

// splitCommand splits a source.txt command line into words: blanks
// separate, single and double quotes group (no escapes inside single
// quotes, backslash escapes inside double quotes and outside quotes).
func splitCommand(line string) ([]string, error) {
	var words []string
	var cur bytes.Buffer
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestCompare(t *testing.T) {
	const vela = `---
# Application(app with topology prod) -- Component(web)
---

apiVersion: apps/v1
kind: Deployment
metadata:
  annotations: {}
  labels:
    app.oam.dev/appRevision: ""
    app.oam.dev/name: app
  name: web
  namespace: default
spec:
  replicas: 1
`
	cases := []struct {
		reason string
		want   string
		moveNS map[string]string
		got    string
		diff   []string
	}{
		{
			reason: "empty values and the appRevision label are not compared",
			want:   vela,
			got:    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, labels: {app.oam.dev/name: app, app.oam.dev/appRevision: app-v1}}\nspec: {replicas: 1, x: []}\n",
		},
		{
			reason: "a changed value is reported by path",
			want:   vela,
			got:    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, labels: {app.oam.dev/name: app}}\nspec: {replicas: 2}\n",
			diff:   []string{"  apps/v1 Deployment default/web: differs", "    ~ spec.replicas: expected 1, got 2"},
		},
		{
			reason: "objects are a multiset: a second copy is a difference",
			want:   vela,
			got:    strings.Repeat("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, labels: {app.oam.dev/name: app}}\nspec: {replicas: 1}\n", 2),
			diff:   []string{"  apps/v1 Deployment default/web: expected 1 object(s), got 2"},
		},
		{
			reason: "deviation (b) moves the objects of a topology's blocks to its namespace",
			want:   vela,
			moveNS: map[string]string{"prod": "prod-ns"},
			got:    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod-ns, labels: {app.oam.dev/name: app}}\nspec: {replicas: 1}\n",
		},
		{
			reason: "WARNING lines are compared as text",
			want:   "WARNING: policy p not referenced by application\n",
			got:    "WARNING: workflow w not referenced by application\n",
			diff: []string{
				`  line "WARNING: policy p not referenced by application": expected 1 object(s), got 0`,
				`  line "WARNING: workflow w not referenced by application": expected 0 object(s), got 1`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			want, err := parseOutput(tc.want, tc.moveNS)
			require.NoError(t, err)
			got, err := parseOutput(tc.got, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.diff, compare(want, got))
		})
	}
}

func TestSplitCommand(t *testing.T) {
	got, err := splitCommand(`vela dry-run -f 'a b.yaml' -d "x\"y"  --offline`)
	require.NoError(t, err)
	assert.Equal(t, []string{"vela", "dry-run", "-f", "a b.yaml", "-d", `x"y`, "--offline"}, got)
	_, err = splitCommand(`vela 'open`)
	assert.Error(t, err)
}
