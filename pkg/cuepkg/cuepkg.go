// Package cuepkg holds the CUE provider packages that definitions import
// (`import "vela/kube"`, `"vela/op"`, …): their schemas, and which kind of
// definition may import which. It follows what KubeVela v1.11 serves:
//
//   - workflow steps: the packages of KubeVela's workflow compiler — the
//     legacy flat vela/op (and vela/ql), the $params/$returns packages of
//     kubevela/workflow (vela/kube, vela/builtin, vela/http, vela/util,
//     vela/time, vela/email, vela/metrics, vela/config) and KubeVela's own
//     vela/multicluster, vela/oam, vela/query, vela/helm and vela/terraform;
//   - component and trait templates: KubeVela's workload compiler (vela/kube,
//     vela/http, vela/base64, vela/cue of kubevela/pkg, vela/config with
//     #ImageRegistry/#HelmRepository, and vela/helm with #Render);
//   - policy templates: kubevela/pkg's default compiler (vela/kube,
//     vela/http, vela/base64, vela/cue);
//   - health policies, custom status and status details: none (CUE's
//     standard library only).
//
// The schemas of kubevela/workflow and kubevela/pkg are taken from those
// libraries (generated into zz_generated.templates.go by hack/cuepkggen, so
// that the provider implementations are not linked into every binary); the others are oamflow's (cue/*.cue), written to the field
// names and types KubeVela documents, with oamflow's extensions (oam and
// op #ApplyComponent also take a component by name). The CUE engine
// compiles templates against these schemas (pkg/cuex); the workflow
// runtime pairs the step packages with provider functions (pkg/workflow).
package cuepkg

import (
	_ "embed"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
)

// Prefix starts the import path of every provider package.
const Prefix = "vela/"

// Package is one provider package: imported as Prefix+Name, its schema
// is Template (CUE, with or without a package clause).
type Package struct {
	Name     string
	Template string
}

// Path is the import path ("vela/kube").
func (p Package) Path() string { return Prefix + p.Name }

// Set names the packages one kind of CUE may import.
type Set string

// The package sets.
const (
	// None is CUE's standard library only (health policies, custom
	// status, status details, anything not a definition template).
	None Set = ""
	// Workload is what component and trait templates may import.
	Workload Set = "workload"
	// Policy is what policy templates may import.
	Policy Set = "policy"
	// Step is what workflow-step templates may import.
	Step Set = "workflow-step"
)

// SetFor returns the set a definition kind's template may import:
// "component" and "trait" → Workload, "policy" → Policy, "workflow-step"
// → Step, anything else → None.
func SetFor(kind string) Set {
	switch kind {
	case "component", "trait":
		return Workload
	case "policy":
		return Policy
	case "workflow-step":
		return Step
	}
	return None
}

var (
	//go:embed cue/op.cue
	opExtra string
	//go:embed cue/op_oam.cue
	opOAM string
	//go:embed cue/oam.cue
	oamSchema string
	//go:embed cue/helm.cue
	helmSchema string
	//go:embed cue/helm_render.cue
	helmRender string
	//go:embed cue/multicluster.cue
	multiclusterSchema string
	//go:embed cue/query.cue
	querySchema string
	//go:embed cue/ql.cue
	qlSchema string
	//go:embed cue/terraform.cue
	terraformSchema string
	//go:embed cue/workload_config.cue
	workloadConfig string
)

// Packages returns the packages of a set, in a stable order (nil for None).
// Each call builds fresh values; the templates are immutable strings.
func Packages(s Set) []Package {
	switch s {
	case Step:
		return []Package{
			{"op", strings.Join([]string{workflowLegacyOp, opOAM, opExtra}, "\n")},
			{"ql", qlSchema},
			{"kube", workflowKube},
			{"builtin", workflowBuiltin},
			{"http", workflowHTTP},
			{"util", workflowUtil},
			{"time", workflowTime},
			{"email", workflowEmail},
			{"metrics", workflowMetrics},
			{"config", workflowConfig},
			{"oam", oamSchema},
			{"multicluster", multiclusterSchema},
			{"query", querySchema},
			{"helm", helmSchema + "\n" + helmRender},
			{"terraform", terraformSchema},
		}
	case Workload:
		return append(libraryPackages(),
			Package{"config", workloadConfig},
			Package{"helm", helmRender},
		)
	case Policy:
		return libraryPackages()
	}
	return nil
}

// libraryPackages are kubevela/pkg's own packages (its default compiler's).
func libraryPackages() []Package {
	return []Package{
		{"kube", libraryKube},
		{"http", libraryHTTP},
		{"base64", libraryBase64},
		{"cue", libraryCUE},
	}
}

// Lookup returns the package of set s imported as path.
func Lookup(s Set, path string) (Package, bool) {
	for _, p := range Packages(s) {
		if p.Path() == path {
			return p, true
		}
	}
	return Package{}, false
}

// Action is one provider action of a package: the definition a template
// uses (#Apply) and the function it calls (its #do).
type Action struct {
	Name string // "#Apply"
	Do   string // "apply"
}

// Actions lists the provider actions a package's schema declares (the
// definitions with a #do), sorted by name. Composites without a #do of
// their own (op.#ApplyApplication) are not listed.
func Actions(p Package) ([]Action, error) {
	f, err := parser.ParseFile(p.Path()+".cue", p.Template)
	if err != nil {
		return nil, err
	}
	v := cuecontext.New().BuildFile(f)
	it, err := v.Fields(cue.Definitions(true))
	if err != nil {
		return nil, err
	}
	var out []Action
	for it.Next() {
		if !it.Selector().IsDefinition() {
			continue
		}
		do, err := it.Value().LookupPath(cue.ParsePath("#do")).String()
		if err != nil {
			continue
		}
		out = append(out, Action{Name: it.Selector().String(), Do: do})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
