// Command floor measures the least a whole-process `oamflow dry-run
// --offline` of hack/bench/render's app can cost on this machine with the
// pinned CUE: a binary that links only CUE, sigs.k8s.io/yaml and the
// built-in definitions (no client-go, controller-runtime or Helm, which
// the oamflow CLI links) reads the app, compiles the five templates it
// uses (webservice, scaler, env, labels, storage) and evaluates each once
// with its properties, decoding the component's output and each trait's
// patch. It does none of the rest (validation messages, patch merging,
// labels, YAML output), so a real dry-run cannot be faster than this
// process.
//
// Run through hack/bench/render/run.sh (FLOOR=1), which times the process
// like it times oamflow, or directly:
//
//	go run ./hack/bench/render/floor pkg/render/testdata/bench/one.yaml
//
// -v prints the in-process time of the CUE work (cold: the first
// evaluation in a fresh process pays for page faults and cold caches);
// -startup exits at once, timing only the lean binary's start-up.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/cuex"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

type app struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Components []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Traits     []struct {
				Type       string         `json:"type"`
				Properties map[string]any `json:"properties"`
			} `json:"traits"`
		} `json:"components"`
	} `json:"spec"`
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "-startup" {
		return nil
	}
	verbose := len(args) > 0 && args[0] == "-v"
	if verbose {
		args = args[1:]
	}
	if len(args) != 1 {
		return errors.New("usage: floor [-startup | -v] APP.yaml")
	}
	start := time.Now()
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var a app
	if err := yaml.Unmarshal(data, &a); err != nil {
		return err
	}
	e := cuex.NewEngine()
	ctx := context.Background()
	for _, c := range a.Spec.Components {
		cctx := map[string]any{"name": c.Name, "namespace": a.Metadata.Namespace, "appName": a.Metadata.Name,
			"appRevision": a.Metadata.Name + "-v1", "appRevisionNum": int64(1), "revision": c.Name + "-v1",
			"cluster": "local", "workflowName": a.Metadata.Name, "publishVersion": "",
			"components": []any{}, "appLabels": map[string]any{}, "appAnnotations": map[string]any{},
			"clusterVersion": map[string]any{"major": int64(1), "minor": int64(31), "gitVersion": "v1.31.0", "platform": "linux/amd64"}}
		var output map[string]any
		if err := evaluate(ctx, e, "components/"+c.Type+".cue", cctx, normalize(c.Properties), "output", &output); err != nil {
			return err
		}
		cctx["output"] = output
		cctx["outputs"] = map[string]any{}
		cctx["componentType"] = c.Type
		for _, t := range c.Traits {
			var patch any
			if err := evaluate(ctx, e, "traits/"+t.Type+".cue", cctx, normalize(t.Properties), "patch", &patch); err != nil {
				return err
			}
		}
	}
	if verbose {
		fmt.Fprintf(os.Stderr, "CUE work: %v\n", time.Since(start))
	}
	return nil
}

// evaluate compiles a built-in's template and decodes field of its
// evaluation with context cctx and parameter props into out.
func evaluate(ctx context.Context, e *cuex.Engine, file string, cctx, props map[string]any, field string, out any) error {
	src, err := fs.ReadFile(definitions.FS, file)
	if err != nil {
		return err
	}
	t, err := e.Compile(cuex.Source{Kind: "definition", Name: file}, template(string(src)))
	if err != nil {
		return err
	}
	return e.Eval(ctx, t, map[string]any{"context": cctx, "parameter": props}, func(v cue.Value) error {
		return v.LookupPath(cue.ParsePath(field)).Decode(out)
	})
}

// template cuts the imports and the `template: {...}` body out of a
// formatted built-in definition file (pkg/definition does this for real;
// it links controller-runtime, which this program must not).
func template(src string) string {
	var b strings.Builder
	in, imports := false, false
	for _, line := range strings.Split(src, "\n") {
		switch {
		case line == "template: {":
			in = true
		case in && line == "}":
			in = false
		case in:
			b.WriteString(strings.TrimPrefix(line, "\t"))
			b.WriteByte('\n')
		case line == "import (":
			imports = true
			b.WriteString(line + "\n")
		case imports:
			imports = line != ")"
			b.WriteString(line + "\n")
		case strings.HasPrefix(line, "import "):
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// normalize turns the float64 numbers YAML decoding gives into int64 where
// they are integral, as oamflow's own decoding does.
func normalize(m map[string]any) map[string]any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case float64:
			if x == float64(int64(x)) {
				return int64(x)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	if m == nil {
		return map[string]any{}
	}
	return walk(m).(map[string]any)
}
