package render

import (
	"context"
	"testing"

	"cuelang.org/go/cue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
)

const patchBase = `
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: app
          image: app:1
          env:
            - {name: A, value: "1"}
            - {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}
          envFrom:
            - configMapRef: {name: base}
          args: ["--x", "--y"]
          resources: {limits: {cpu: "1", memory: 1Gi}}
        - name: sidecar
          image: side:1
      volumes:
        - {name: data, emptyDir: {}}
`

func TestApplyPatch(t *testing.T) {
	cases := []struct {
		reason string
		patch  string // CUE: the `patch` field of a trait
		want   string // YAML of the changed part, compared by path
		path   string
		errMsg string
	}{
		{
			reason: "structs merge, scalars are replaced",
			patch:  `patch: spec: replicas: 3`,
			path:   "spec.replicas",
			want:   `3`,
		},
		{
			reason: "+patchKey=name merges list items by name and appends new ones",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchKey=name
		env: [{name: "A", value: "2"}, {name: "C", value: "3"}]
	}]
}`,
			path: "spec.template.spec.containers[0].env",
			want: `[{name: A, value: "2"}, {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}, {name: C, value: "3"}]`,
		},
		{
			reason: "+patchStrategy=retainKeys on a list replaces matched items instead of merging them",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchStrategy=retainKeys
		env: [{name: "B", value: "plain"}]
	}]
}`,
			path: "spec.template.spec.containers[0].env",
			want: `[{name: A, value: "1"}, {name: B, value: plain}]`,
		},
		{
			reason: "+patchStrategy=retainKeys on a struct drops keys the patch does not name",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchStrategy=retainKeys
		resources: limits: cpu: "2"
	}]
}`,
			path: "spec.template.spec.containers[0].resources",
			want: `{limits: {cpu: "2", memory: 1Gi}}`,
		},
		{
			reason: "+patchStrategy=replace replaces the value whole",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchStrategy=replace
		resources: limits: cpu: "2"
	}]
}`,
			path: "spec.template.spec.containers[0].resources",
			want: `{limits: {cpu: "2"}}`,
		},
		{
			reason: "a composite +patchKey keeps envFrom entries of different kinds apart and dedupes equal ones",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchKey=configMapRef.name,secretRef.name
		envFrom: [{secretRef: name: "base"}, {configMapRef: name: "base"}, {configMapRef: name: "extra"}]
	}]
}`,
			path: "spec.template.spec.containers[0].envFrom",
			want: `[{configMapRef: {name: base}}, {secretRef: {name: base}}, {configMapRef: {name: extra}}]`,
		},
		{
			reason: "without markers, lists of objects that all have names merge by name",
			patch:  `patch: spec: template: spec: volumes: [{name: "data", emptyDir: medium: "Memory"}, {name: "cache", emptyDir: {}}]`,
			path:   "spec.template.spec.volumes",
			want:   `[{name: data, emptyDir: {medium: Memory}}, {name: cache, emptyDir: {}}]`,
		},
		{
			reason: "without markers, other lists of objects merge item by item (the first container)",
			patch:  `patch: spec: template: spec: containers: [{imagePullPolicy: "Always"}]`,
			path:   "spec.template.spec.containers[0].imagePullPolicy",
			want:   `Always`,
		},
		{
			reason: "+patchKey=name with no patch item naming it merges by position (KubeVela's resource trait patches the first container)",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{resources: requests: cpu: "2"}]
}`,
			path: "spec.template.spec.containers",
			want: `[{name: app, image: "app:1", env: [{name: A, value: "1"}, {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}], envFrom: [{configMapRef: {name: base}}], args: ["--x", "--y"], resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: "2"}}}, {name: sidecar, image: "side:1"}]`,
		},
		{
			reason: "an open list's element pattern patches every item (lifecycle trait: containers: [...{lifecycle: ...}])",
			patch:  `patch: spec: template: spec: containers: [...{lifecycle: preStop: exec: command: ["stop"]}]`,
			path:   "spec.template.spec.containers[1]",
			want:   `{name: sidecar, image: "side:1", lifecycle: {preStop: {exec: {command: [stop]}}}}`,
		},
		{
			reason: "explicit items of an open list merge by position, its pattern patches the items after them",
			patch:  `patch: spec: template: spec: containers: [{image: "app:2"}, ...{imagePullPolicy: "Always"}]`,
			path:   "spec.template.spec.containers[1]",
			want:   `{name: sidecar, image: "side:1", imagePullPolicy: Always}`,
		},
		{
			reason: "a +patchKey holds for the lists below its field (containers merge by image under patch's marker, not by position)",
			patch: `// +patchKey=image
patch: spec: template: spec: containers: [{image: "side:1", imagePullPolicy: "Always"}]`,
			path: "spec.template.spec.containers[1]",
			want: `{name: sidecar, image: "side:1", imagePullPolicy: Always}`,
		},
		{
			reason: "items sharing a key but otherwise distinct all survive (two mounts of one volume); a repeated one is added once",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	volumes: [{name: "data", emptyDir: {}}, {name: "data", emptyDir: {}}]
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchKey=name
		volumeMounts: [{name: "data", mountPath: "/a"}, {name: "data", mountPath: "/b"}, {name: "data", mountPath: "/a"}]
	}]
}`,
			path: "spec.template.spec.containers[0].volumeMounts",
			want: `[{name: data, mountPath: /a}, {name: data, mountPath: /b}]`,
		},
		{
			reason: "a patch naming a base item's key twice merges the first into the base item and keeps the second",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	volumes: [{name: "data", emptyDir: medium: "Memory"}, {name: "data", hostPath: path: "/d"}]
}`,
			path: "spec.template.spec.volumes",
			want: `[{name: data, emptyDir: {medium: Memory}}, {name: data, hostPath: {path: /d}}]`,
		},
		{
			reason: "+patchStrategy=open on patch is the default merge (KubeVela's command trait)",
			patch: `// +patchStrategy=open
patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchStrategy=replace
		command: ["run"]
		// +patchStrategy=replace
		args: ["--z"]
	}]
}`,
			path: "spec.template.spec.containers[0]",
			want: `{name: app, image: "app:1", command: [run], args: ["--z"], env: [{name: A, value: "1"}, {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}], envFrom: [{configMapRef: {name: base}}], resources: {limits: {cpu: "1", memory: 1Gi}}}`,
		},
		{
			reason: "an env var given valueFrom by the patch loses the component's literal value",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchKey=name
		env: [{name: "A", valueFrom: secretKeyRef: {name: "s", key: "a"}}]
	}]
}`,
			path: "spec.template.spec.containers[0].env[0]",
			want: `{name: A, valueFrom: {secretKeyRef: {name: s, key: a}}}`,
		},
		{
			reason: "an env var given a literal value by the patch loses the component's valueFrom",
			patch: `patch: spec: template: spec: {
	// +patchKey=name
	containers: [{
		name: "app"
		// +patchKey=name
		env: [{name: "B", value: "plain"}]
	}]
}`,
			path: "spec.template.spec.containers[0].env[1]",
			want: `{name: B, value: plain}`,
		},
		{
			reason: "an unknown +patchStrategy is an error naming the ones there are",
			patch: `// +patchStrategy=bogus
patch: spec: replicas: 2`,
			errMsg: "unknown +patchStrategy=bogus (want retainKeys, replace, open, jsonMergePatch or jsonPatch)",
		},
		{
			reason: "lists of scalars are replaced",
			patch:  `patch: spec: template: spec: containers: [{name: "app", args: ["--z"]}]`,
			path:   "spec.template.spec.containers[0].args",
			want:   `["--z"]`,
		},
		{
			reason: "a constraint in the patch checks the base value",
			patch:  `patch: spec: replicas: int & >=1`,
			path:   "spec.replicas",
			want:   `1`,
		},
		{
			reason: "a constraint the base value breaks is an error naming the path",
			patch:  `patch: spec: replicas: int & >=5`,
			errMsg: "spec.replicas: value 1 does not satisfy the patch",
		},
		{
			reason: "jsonMergePatch patches the whole object; null deletes",
			patch: `// +patchStrategy=jsonMergePatch
patch: {spec: {replicas: 4, template: spec: volumes: null}}`,
			path: "spec",
			want: `{replicas: 4, template: {spec: {containers: [{name: app, image: "app:1", env: [{name: A, value: "1"}, {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}], envFrom: [{configMapRef: {name: base}}], args: ["--x", "--y"], resources: {limits: {cpu: "1", memory: 1Gi}}}, {name: sidecar, image: "side:1"}]}}}`,
		},
		{
			reason: "jsonPatch applies RFC 6902 operations in order",
			patch: `// +patchStrategy=jsonPatch
patch: operations: [
	{op: "replace", path: "/spec/replicas", value: 5},
	{op: "add", path: "/spec/template/spec/containers/0/args/-", value: "--z"},
	{op: "remove", path: "/spec/template/spec/containers/1"},
	{op: "test", path: "/spec/replicas", value: 5},
]`,
			path: "spec.template.spec.containers[0].args",
			want: `["--x", "--y", "--z"]`,
		},
		{
			reason: "a failing jsonPatch operation says which one",
			patch: `// +patchStrategy=jsonPatch
patch: operations: [{op: "remove", path: "/spec/nothing"}]`,
			errMsg: "JSON patch operation 0 (remove /spec/nothing): /spec/nothing: no field \"nothing\"",
		},
	}
	engine := cuex.NewEngine()
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			base := decodeYAML(t, patchBase).(map[string]any)
			tm, err := engine.Compile(cuex.Source{Kind: "trait", Name: "test"}, tc.patch)
			require.NoError(t, err)
			var got map[string]any
			err = engine.Eval(context.Background(), tm, nil, func(v cue.Value) error {
				var perr error
				got, perr = applyPatch(base, v.LookupPath(cue.ParsePath("patch")))
				return perr
			})
			if tc.errMsg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errMsg)
				return
			}
			require.NoError(t, err)
			var want any
			require.NoError(t, yaml.Unmarshal([]byte(tc.want), &want))
			assert.Equal(t, normalize(want), normalize(at(t, got, tc.path)))
			// The base is never modified.
			assert.Equal(t, decodeYAML(t, patchBase), base)
		})
	}
}

// decodeYAML reads YAML as the renderer holds data (integers as int64).
func decodeYAML(t *testing.T, s string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	require.NoError(t, err)
	v, err := appfile.DecodeJSON(j)
	require.NoError(t, err)
	return v
}

// at walks a dotted path with [i] indices.
func at(t *testing.T, m map[string]any, path string) any {
	t.Helper()
	var cur any = m
	for _, seg := range splitPath(path) {
		mm, ok := cur.(map[string]any)
		require.True(t, ok, "%s: %s is not inside an object", path, seg.key)
		cur = mm[seg.key]
		if seg.isIdx {
			l, ok := cur.([]any)
			require.True(t, ok && seg.idx < len(l), "%s: no item %d", path, seg.idx)
			cur = l[seg.idx]
		}
	}
	return cur
}

type pathSeg struct {
	key   string
	idx   int
	isIdx bool
}

func splitPath(p string) []pathSeg {
	var out []pathSeg
	for _, part := range splitDots(p) {
		seg := pathSeg{key: part}
		if i := indexByte(part, '['); i >= 0 {
			seg.key = part[:i]
			seg.isIdx = true
			for _, r := range part[i+1 : len(part)-1] {
				seg.idx = seg.idx*10 + int(r-'0')
			}
		}
		out = append(out, seg)
	}
	return out
}

func splitDots(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}
