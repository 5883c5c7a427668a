package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"cuelang.org/go/cue"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/cuex"
	"github.com/oamflow/oamflow/pkg/definition"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
)

// clusterResolver resolves topology clusterLabelSelectors against the
// clusters registered in the hub (cluster Secrets in oamflow-system).
func (o *GlobalOptions) clusterResolver() (placement.Resolver, error) {
	c, cfg, err := o.kubeClient()
	if err != nil {
		return nil, err
	}
	reg, err := multicluster.NewRegistry(c, cfg)
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// defNamespace is -n, else oamflow-system (where definitions visible to
// every namespace live).
func (o *GlobalOptions) defNamespace() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	return appfile.SystemNamespace
}

func newDefCommand(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "def",
		Short: "Author, check, convert and install definitions",
		Long: `Work with OAM definitions in the KubeVela .cue definition format (a header block
"<name>": {type: "component"|"trait"|"policy"|"workflow-step", ...} followed by
template: {...}) or as ComponentDefinition/TraitDefinition/PolicyDefinition/
WorkflowStepDefinition YAML.

vet, render and init work offline; apply, list and get need a cluster.`,
	}
	cmd.AddCommand(newDefVetCommand(g), newDefRenderCommand(g), newDefInitCommand(g),
		newDefApplyCommand(g), newDefListCommand(g), newDefGetCommand(g))
	return cmd
}

func newDefVetCommand(_ *GlobalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "vet FILE|DIR...",
		Short: "Check that definition files load and their CUE compiles and evaluates",
		Long: `Check definition files (.cue or YAML; a folder stands for the .cue, .yaml,
.yml and .json files under it, walked recursively): the header, the template
(compiled against the provider packages its kind may import, and evaluated
with an empty parameter: only errors that no property could fix are
reported), the required top-level fields of its kind, and the health policy,
custom status and details CUE (evaluated with the context they get at run
time: context.output, context.outputs, parameter; values only known then are
no error). Prints one line per definition and a line per warning (an import
or provider action oamflow does not provide, legacy list arithmetic);
exits 1 if any definition is invalid. Warnings do not change the exit code.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := expandDefinitionPaths(args)
			if err != nil {
				return err
			}
			engine := cuex.NewEngine()
			bad, total, warned := 0, 0, 0
			out := cmd.OutOrStdout()
			skipped := 0
			for _, file := range files {
				defs, skip, err := readDefFile(file)
				if err != nil {
					bad++
					total++
					fmt.Fprintf(out, "✗ %s\n    %v\n", file.path, err)
					continue
				}
				if skip {
					skipped++
					continue
				}
				for _, d := range defs {
					total++
					problems, warnings := vetDefinition(cmd.Context(), engine, d)
					mark := "✓"
					if len(problems) > 0 {
						bad++
						mark = "✗"
					}
					fmt.Fprintf(out, "%s %s: %s %q\n", mark, d.Origin, d.Kind, d.Name)
					for _, p := range problems {
						for _, line := range strings.Split(p, "\n") {
							fmt.Fprintf(out, "    %s\n", line)
						}
					}
					for _, w := range warnings {
						warned++
						fmt.Fprintf(out, "    warning: %s\n", w)
					}
				}
			}
			if skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d file(s) in the folders skipped: not definitions\n", skipped)
			}
			if warned > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d warning(s)\n", warned)
			}
			if bad > 0 {
				return userErrorf("%d of %d definitions are invalid", bad, total)
			}
			return nil
		},
	}
}

// noteSkipped says how many files of folders were not definitions.
func noteSkipped(w io.Writer, n int) {
	if n > 0 {
		fmt.Fprintf(w, "%d file(s) in the folders skipped: not definitions\n", n)
	}
}

// vetSampleContext is the context definitions are evaluated with by vet.
func vetSampleContext() map[string]any {
	return map[string]any{
		"name": "sample", "namespace": "default", "appName": "sample-app", "appRevision": "sample-app-v1",
		"appRevisionNum": int64(1), "revision": "sample-v1", "components": []any{}, "appLabels": map[string]any{},
		"appAnnotations": map[string]any{}, "cluster": "", "workflowName": "sample-app", "publishVersion": "",
		"clusterVersion": map[string]any{"major": int64(1), "minor": int64(31), "gitVersion": "v1.31.0", "platform": "linux/amd64"},
	}
}

// vetDefinition returns the problems of one definition, and its warnings.
func vetDefinition(ctx context.Context, engine *cuex.Engine, d *appfile.Definition) (problems, warnings []string) {
	if ctx == nil {
		ctx = context.Background()
	}
	text := d.Template()
	if strings.TrimSpace(text) == "" {
		return []string{"no CUE template (spec.schematic.cue.template)"}, nil
	}
	t, err := engine.Compile(d.CUESource(), text)
	if err != nil {
		return []string{err.Error()}, nil
	}
	need := map[appfile.DefinitionKind][]string{
		appfile.KindComponent: {"output", "outputs"},
		appfile.KindTrait:     {"patch", "outputs", "patchOutputs", "parameter"},
	}
	if fields := need[d.Kind]; len(fields) > 0 {
		found := false
		for _, f := range fields {
			if t.HasField(f) {
				found = true
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("a %s template defines at least one of %s", d.Kind, strings.Join(fields, ", ")))
		}
	}
	var outputNames []string
	if d.Kind != appfile.KindWorkflowStep {
		err := engine.Eval(ctx, t, map[string]any{"context": vetSampleContext()}, func(v cue.Value) error {
			outputNames = fieldNames(v.LookupPath(cue.MakePath(cue.Str("outputs"))))
			return v.Validate()
		})
		if err != nil {
			problems = append(problems, cuex.Translate(d.CUESource(), err, "").Error())
		}
	}
	// Compiling and evaluating may have rewritten legacy list arithmetic:
	// the engine's current template says so.
	if t2, err := engine.Compile(d.CUESource(), text); err == nil {
		t = t2
	}
	warnings = append(warnings, t.Warnings()...)
	if st := d.Status(); st != nil {
		problems = append(problems, vetStatus(ctx, engine, d, st, outputNames)...)
	}
	return problems, warnings
}

// vetStatus compiles a definition's health policy, custom status and
// details and evaluates them with the context they get at run time
// (KubeVela's): the sample context plus context.output (the workload),
// context.outputs (the definition's outputs by name) and context.status
// (healthy, details) as open objects, and parameter. What only the live
// objects can tell is incomplete, not an error.
func vetStatus(ctx context.Context, engine *cuex.Engine, d *appfile.Definition, st *common.Status, outputNames []string) []string {
	var problems []string
	cctx := vetSampleContext()
	cctx["output"] = map[string]any{}
	outs := map[string]any{}
	for _, n := range outputNames {
		outs[n] = map[string]any{}
	}
	cctx["outputs"] = outs
	cctx["status"] = map[string]any{"healthy": true, "details": map[string]any{}}
	for _, part := range []struct{ kind, text string }{
		{"health policy", st.HealthPolicy}, {"custom status", st.CustomStatus}, {"status details", st.Details},
	} {
		if strings.TrimSpace(part.text) == "" {
			continue
		}
		src := cuex.Source{Kind: part.kind, Name: d.Name}
		t, err := engine.Compile(src, part.text)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		err = engine.Eval(ctx, t, map[string]any{"context": cctx, "parameter": map[string]any{}}, func(v cue.Value) error {
			return v.Validate()
		})
		if err != nil {
			problems = append(problems, cuex.Translate(src, err, "").Error())
		}
	}
	return problems
}

// fieldNames lists the regular fields of v (nil when it has none or is not
// a struct).
func fieldNames(v cue.Value) []string {
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

func newDefRenderCommand(_ *GlobalOptions) *cobra.Command {
	var output, outFile string
	cmd := &cobra.Command{
		Use:   "render FILE|DIR...",
		Short: "Convert .cue definition files to CRD YAML (or YAML to .cue with -o cue)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defs, skipped, err := readDefinitionFiles(args)
			if err != nil {
				return err
			}
			noteSkipped(cmd.ErrOrStderr(), skipped)
			var b []byte
			switch output {
			case "yaml":
				objs := make([]client.Object, len(defs))
				for i, d := range defs {
					objs[i] = d.Object
				}
				b, err = definition.EncodeYAML(objs...)
				if err != nil {
					return err
				}
			case "cue":
				for i, d := range defs {
					f, err := definition.FromObject(d.Object)
					if err != nil {
						return &UserError{Err: err}
					}
					cb, err := f.FormatCUE()
					if err != nil {
						return &UserError{Err: err}
					}
					if i > 0 {
						b = append(b, []byte("\n// ---\n")...)
					}
					b = append(b, cb...)
				}
			default:
				return userErrorf("--output must be yaml or cue, not %q", output)
			}
			if outFile != "" {
				return os.WriteFile(outFile, b, 0o644)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (CRD objects) or cue (definition file format)")
	cmd.Flags().StringVar(&outFile, "to", "", "write to this file instead of stdout")
	return cmd
}

// scaffolds are the templates `def init` starts from.
var scaffolds = map[appfile.DefinitionKind]struct{ attributes, template string }{
	appfile.KindComponent: {
		attributes: `	attributes: {
		workload: definition: {
			apiVersion: "apps/v1"
			kind:       "Deployment"
		}
		status: healthPolicy: #"""
			isHealth: (*context.output.status.readyReplicas | 0) == (*context.output.spec.replicas | 1)
			"""#
	}`,
		template: `	output: {
		apiVersion: "apps/v1"
		kind:       "Deployment"
		spec: {
			selector: matchLabels: "app.oam.dev/component": context.name
			template: {
				metadata: labels: "app.oam.dev/component": context.name
				spec: containers: [{
					name:  context.name
					image: parameter.image
				}]
			}
		}
	}
	parameter: {
		// +usage=Container image
		image: string
	}`,
	},
	appfile.KindTrait: {
		attributes: `	attributes: {
		appliesToWorkloads: ["deployments.apps"]
		podDisruptive: false
	}`,
		template: `	patch: spec: template: metadata: annotations: parameter.annotations
	parameter: {
		// +usage=Annotations to add to the pods
		annotations: [string]: string
	}`,
	},
	appfile.KindPolicy: {
		attributes: `	attributes: {}`,
		template: `	parameter: {
		// +usage=What this policy needs
		enabled: *true | bool
	}`,
	},
	appfile.KindWorkflowStep: {
		attributes: `	attributes: {}`,
		template: `	apply: kube.#Apply & {
		$params: value: parameter.object
	}
	parameter: {
		// +usage=The object to apply
		object: {...}
	}`,
	},
}

func newDefInitCommand(_ *GlobalOptions) *cobra.Command {
	var kind, desc, outFile string
	cmd := &cobra.Command{
		Use:   "init NAME --type component|trait|policy|workflow-step",
		Short: "Print a starting .cue definition file (-o FILE writes it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			k := appfile.DefinitionKind(kind)
			sc, ok := scaffolds[k]
			if !ok {
				return userErrorf("--type must be component, trait, policy or workflow-step, not %q", kind)
			}
			var b strings.Builder
			if k == appfile.KindWorkflowStep {
				b.WriteString("import \"vela/kube\"\n\n")
			}
			fmt.Fprintf(&b, "%q: {\n\ttype: %q\n\tannotations: {}\n\tlabels: {}\n\tdescription: %q\n%s\n}\n\ntemplate: {\n%s\n}\n",
				name, kind, desc, sc.attributes, sc.template)
			src := []byte(b.String())
			if _, err := definition.ParseCUE(name+".cue", src); err != nil {
				return fmt.Errorf("scaffold does not parse: %w", err)
			}
			if outFile != "" {
				if _, err := os.Stat(outFile); err == nil {
					return userErrorf("%s exists; not overwriting it", outFile)
				}
				return os.WriteFile(outFile, src, 0o644)
			}
			_, err := cmd.OutOrStdout().Write(src)
			return err
		},
	}
	cmd.Flags().StringVarP(&kind, "type", "t", "", "definition kind: component, trait, policy or workflow-step (required)")
	cmd.Flags().StringVar(&desc, "desc", "", "description")
	cmd.Flags().StringVarP(&outFile, "output", "o", "", "write to this file instead of stdout")
	_ = cmd.MarkFlagRequired("type")
	return cmd
}

func newDefApplyCommand(g *GlobalOptions) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply FILE|DIR...",
		Short: "Install definitions from .cue or YAML files into the cluster",
		Long: `Create or update the definitions of the files in -n NAMESPACE (default
oamflow-system, where definitions are visible to every namespace). Every file
is vetted first; nothing is applied if one is invalid.

Like kubectl apply: the spec becomes the file's; the file's labels and
annotations are set, those other tools set are kept, and a key removed from
the file is removed from the cluster if def apply had set it. A definition
the file would not change is not written and is reported unchanged.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defs, skipped, err := readDefinitionFiles(args)
			if err != nil {
				return err
			}
			noteSkipped(cmd.ErrOrStderr(), skipped)
			engine := cuex.NewEngine()
			for _, d := range defs {
				problems, warnings := vetDefinition(cmd.Context(), engine, d)
				if len(problems) > 0 {
					return userErrorf("%s: %s %q is invalid:\n  %s", d.Origin, d.Kind, d.Name, strings.Join(problems, "\n  "))
				}
				for _, w := range warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
			}
			if dryRun {
				for _, d := range defs {
					fmt.Fprintf(cmd.OutOrStdout(), "%s/%s would be applied in %s\n", d.Kind.CRDKind(), d.Name, g.defNamespace())
				}
				return nil
			}
			c, err := g.appClient()
			if err != nil {
				return err
			}
			ns := g.defNamespace()
			for _, d := range defs {
				verb, err := applyDefinition(cmd.Context(), c, d.Object, ns)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s in %s\n", d.Kind.CRDKind(), d.Name, verb, ns)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "vet and print what would be applied")
	return cmd
}

// applyDefinition creates obj in ns, or updates the definition of that
// name there when applying obj would change it, as `kubectl apply` does:
// the spec becomes obj's; obj's labels and annotations are set while those
// other tools set are kept, and the rest of the served metadata
// (finalizers, ownerReferences, …) stays as served (mergeDefinition). It
// returns verbCreated, verbUpdated or verbUnchanged; unchanged means no
// write at all (the object and its resourceVersion stay as they were).
// Writes are made as field manager FieldManager.
func applyDefinition(ctx context.Context, c client.Client, obj client.Object, ns string) (string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetNamespace(ns)
	kind := definition.KindOf(obj)
	existing, err := definition.NewObject(kind)
	if err != nil {
		return "", err
	}
	key := types.NamespacedName{Namespace: ns, Name: obj.GetName()}
	if err := c.Get(ctx, key, existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading %s %s: %w", kind.CRDKind(), key, err)
		}
		if err := c.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
			return "", fmt.Errorf("creating %s %s: %w", kind.CRDKind(), key, err)
		}
		return verbCreated, nil
	}
	want := mergeDefinition(existing, obj, FieldManager)
	if sameDefinition(existing, want) {
		return verbUnchanged, nil
	}
	if err := c.Update(ctx, want, client.FieldOwner(FieldManager)); err != nil {
		return "", fmt.Errorf("updating %s %s: %w", kind.CRDKind(), key, err)
	}
	return verbUpdated, nil
}

// mergeDefinition returns the definition that applying want over the
// served one should leave: want's spec; for labels and annotations,
// served's, minus the keys manager set earlier (per served's
// metadata.managedFields) that want no longer has, plus want's. So keys
// other tools set — Helm's app.kubernetes.io/managed-by and
// meta.helm.sh/* ownership metadata when the chart installed the
// definitions, `kubectl label` — are kept, and a key removed from a
// definition file is removed from the cluster if apply put it there.
// A key manager only ever set to the value another tool had set first is
// not owned by manager (the API server records ownership on change) and
// is kept.
//
// The rest of the metadata is served's, as a definition file sets only
// name, namespace, labels and annotations: finalizers and ownerReferences
// other clients set (dropping them would let the garbage collector or a
// deletion go ahead behind their back), generateName, the uid and
// resourceVersion the update is checked against, creation and deletion
// timestamps, generation. managedFields are left empty so that the API
// server keeps its own record.
func mergeDefinition(served, want client.Object, manager string) client.Object {
	out := want.DeepCopyObject().(client.Object)
	served = served.DeepCopyObject().(client.Object) // out shares nothing with served
	out.SetGenerateName(served.GetGenerateName())
	out.SetSelfLink(served.GetSelfLink())
	out.SetUID(served.GetUID())
	out.SetResourceVersion(served.GetResourceVersion())
	out.SetGeneration(served.GetGeneration())
	out.SetCreationTimestamp(served.GetCreationTimestamp())
	out.SetDeletionTimestamp(served.GetDeletionTimestamp())
	out.SetDeletionGracePeriodSeconds(served.GetDeletionGracePeriodSeconds())
	out.SetOwnerReferences(served.GetOwnerReferences())
	out.SetFinalizers(served.GetFinalizers())
	out.SetManagedFields(nil)
	ownedLabels, ownedAnnotations := ownedMetadataKeys(served, manager)
	out.SetLabels(mergeKeys(served.GetLabels(), want.GetLabels(), ownedLabels))
	out.SetAnnotations(mergeKeys(served.GetAnnotations(), want.GetAnnotations(), ownedAnnotations))
	return out
}

// mergeKeys is served without the owned keys, overlaid with want; nil when
// empty.
func mergeKeys(served, want map[string]string, owned map[string]bool) map[string]string {
	out := map[string]string{}
	for k, v := range served {
		if !owned[k] {
			out[k] = v
		}
	}
	for k, v := range want {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ownedMetadataKeys returns the label and annotation keys that manager
// owns in obj's metadata.managedFields (FieldsV1 sets such as
// {"f:metadata":{"f:labels":{"f:team":{}}}}, any operation, the main
// resource only). Entries it cannot read own nothing.
func ownedMetadataKeys(obj client.Object, manager string) (labels, annotations map[string]bool) {
	labels, annotations = map[string]bool{}, map[string]bool{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var set struct {
			Metadata struct {
				Labels      map[string]json.RawMessage `json:"f:labels"`
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &set); err != nil {
			continue
		}
		for k := range set.Metadata.Labels {
			if name, ok := strings.CutPrefix(k, "f:"); ok {
				labels[name] = true
			}
		}
		for k := range set.Metadata.Annotations {
			if name, ok := strings.CutPrefix(k, "f:"); ok {
				annotations[name] = true
			}
		}
	}
	return labels, annotations
}

// sameDefinition reports whether a and b agree on what apply sets: labels,
// annotations (kubectl's last-applied-configuration aside) and spec,
// compared through their .cue file model (definition.FromObject), so
// server-set metadata and status never count.
func sameDefinition(a, b client.Object) bool {
	view := func(o client.Object) string {
		f, err := definition.FromObject(o)
		if err != nil {
			return ""
		}
		raw, _ := json.Marshal(f)
		return string(raw)
	}
	va, vb := view(a), view(b)
	return va != "" && va == vb
}

// stripMeta drops server-set metadata (for printing).
func stripMeta(obj client.Object) client.Object {
	cp := obj.DeepCopyObject().(client.Object)
	cp.SetResourceVersion("")
	cp.SetUID("")
	cp.SetGeneration(0)
	cp.SetManagedFields(nil)
	cp.SetCreationTimestamp(metav1.Time{})
	return cp
}

func newDefListCommand(g *GlobalOptions) *cobra.Command {
	var kind string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the definitions installed in the cluster",
		Long: `List definitions in -n NAMESPACE (default: oamflow-system and vela-system, the
namespaces visible to every app), or in every namespace with -A.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kinds := definition.Kinds
			if kind != "" {
				k := appfile.DefinitionKind(kind)
				if !k.Valid() {
					return userErrorf("--type must be component, trait, policy or workflow-step, not %q", kind)
				}
				kinds = []appfile.DefinitionKind{k}
			}
			c, err := g.appClient()
			if err != nil {
				return err
			}
			var nss []string
			switch {
			case all:
				nss = []string{""}
			case g.Namespace != "":
				nss = []string{g.Namespace}
			default:
				nss = []string{appfile.SystemNamespace, appfile.VelaSystemNamespace}
			}
			rows, err := listDefinitions(cmd.Context(), c, kinds, nss)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTYPE\tNAMESPACE\tDESCRIPTION")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.GetName(), definition.KindOf(r), r.GetNamespace(), r.GetAnnotations()[definition.AnnoDescription])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&kind, "type", "t", "", "only this kind: component, trait, policy or workflow-step")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list in every namespace")
	return cmd
}

func listDefinitions(ctx context.Context, c client.Client, kinds []appfile.DefinitionKind, nss []string) ([]client.Object, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var out []client.Object
	for _, k := range kinds {
		for _, ns := range nss {
			var list client.ObjectList
			switch k {
			case appfile.KindComponent:
				list = &v1beta1.ComponentDefinitionList{}
			case appfile.KindTrait:
				list = &v1beta1.TraitDefinitionList{}
			case appfile.KindPolicy:
				list = &v1beta1.PolicyDefinitionList{}
			case appfile.KindWorkflowStep:
				list = &v1beta1.WorkflowStepDefinitionList{}
			}
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return nil, fmt.Errorf("listing %ss: %w", k.CRDKind(), err)
			}
			switch l := list.(type) {
			case *v1beta1.ComponentDefinitionList:
				for i := range l.Items {
					out = append(out, &l.Items[i])
				}
			case *v1beta1.TraitDefinitionList:
				for i := range l.Items {
					out = append(out, &l.Items[i])
				}
			case *v1beta1.PolicyDefinitionList:
				for i := range l.Items {
					out = append(out, &l.Items[i])
				}
			case *v1beta1.WorkflowStepDefinitionList:
				for i := range l.Items {
					out = append(out, &l.Items[i])
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ki, kj := definition.KindOf(out[i]), definition.KindOf(out[j])
		if ki != kj {
			return ki < kj
		}
		if out[i].GetName() != out[j].GetName() {
			return out[i].GetName() < out[j].GetName()
		}
		return out[i].GetNamespace() < out[j].GetNamespace()
	})
	return out, nil
}

func newDefGetCommand(g *GlobalOptions) *cobra.Command {
	var kind, output string
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Print an installed definition as a .cue file (or YAML with -o yaml)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "cue" && output != "yaml" {
				return userErrorf("--output must be cue or yaml, not %q", output)
			}
			kinds := definition.Kinds
			if kind != "" {
				k := appfile.DefinitionKind(kind)
				if !k.Valid() {
					return userErrorf("--type must be component, trait, policy or workflow-step, not %q", kind)
				}
				kinds = []appfile.DefinitionKind{k}
			}
			c, err := g.appClient()
			if err != nil {
				return err
			}
			src := appfile.NewClusterSource(c, g.Namespace, "")
			var found []*appfile.Definition
			for _, k := range kinds {
				d, err := src.Get(cmd.Context(), k, args[0])
				if errors.Is(err, appfile.ErrDefinitionNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				found = append(found, d)
			}
			switch {
			case len(found) == 0:
				return userErrorf("no definition named %q", args[0])
			case len(found) > 1:
				return userErrorf("%d definitions are named %q; pick one with --type", len(found), args[0])
			}
			return printDefinition(cmd.OutOrStdout(), found[0], output)
		},
	}
	cmd.Flags().StringVarP(&kind, "type", "t", "", "kind: component, trait, policy or workflow-step")
	cmd.Flags().StringVarP(&output, "output", "o", "cue", "output format: cue or yaml")
	return cmd
}

func printDefinition(out io.Writer, d *appfile.Definition, format string) error {
	if format == "yaml" {
		b, err := definition.EncodeYAML(stripMeta(d.Object))
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	f, err := definition.FromObject(d.Object)
	if err != nil {
		return err
	}
	b, err := f.FormatCUE()
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
