package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	chart "github.com/oamflow/oamflow/charts/oamflow"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
)

type installOptions struct {
	g              *GlobalOptions
	skipDefinition bool
	timeout        time.Duration
}

func newInstallCommand(g *GlobalOptions) *cobra.Command {
	o := &installOptions{g: g}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install oamflow's CRDs, system namespace and built-in definitions into a cluster",
		Long: `Install into the cluster of --kubeconfig/--context:
  - the core.oam.dev CustomResourceDefinitions (waiting until they are served),
  - the system namespace oamflow-system,
  - the built-in ComponentDefinitions, TraitDefinitions, PolicyDefinitions and
    WorkflowStepDefinitions into oamflow-system (skip with --skip-definitions).
Safe to run again, also over definitions the Helm chart installed: only what
is missing or differs is written (each part says how many objects were
created, updated and left unchanged), labels and annotations other tools set
on the definitions (Helm's ownership metadata, kubectl label) are kept, and
nothing is deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&o.skipDefinition, "skip-definitions", false, "install only the CRDs and the namespace")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the CRDs to be served")
	return cmd
}

func (o *installOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, _, err := o.g.kubeClient(apiextensionsv1.AddToScheme)
	if err != nil {
		return err
	}
	return install(ctx, c, o.g.Out, o.skipDefinition, o.timeout)
}

// Verbs of install and def apply, one per object.
const (
	verbCreated   = "created"
	verbUpdated   = "updated"
	verbUnchanged = "unchanged"
)

// install brings the CRDs, the system namespace and (unless skipDefs) the
// built-in definitions into c, writing only what is missing or differs:
// a second run with nothing changed issues no write. It prints a line per
// part with what was created, updated and left unchanged; timeout bounds
// the wait for the CRDs to be served.
func install(ctx context.Context, c client.Client, out io.Writer, skipDefs bool, timeout time.Duration) error {
	counts, names, err := installCRDs(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "CRDs: %s\n", verbCounts(counts))
	if err := WaitEstablished(ctx, c, names, timeout); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c, appfile.SystemNamespace); err != nil {
		return err
	}
	fmt.Fprintf(out, "namespace %s ready\n", appfile.SystemNamespace)
	if skipDefs {
		return nil
	}
	defs, err := builtinDefinitions()
	if err != nil {
		return err
	}
	counts = map[string]int{}
	for _, d := range defs {
		verb, err := applyDefinition(ctx, c, d.Object, appfile.SystemNamespace)
		if err != nil {
			return err
		}
		counts[verb]++
	}
	fmt.Fprintf(out, "built-in definitions in %s: %s\n", appfile.SystemNamespace, verbCounts(counts))
	return nil
}

// verbCounts says "N created, N updated, N unchanged".
func verbCounts(counts map[string]int) string {
	return fmt.Sprintf("%d %s, %d %s, %d %s", counts[verbCreated], verbCreated,
		counts[verbUpdated], verbUpdated, counts[verbUnchanged], verbUnchanged)
}

// builtinDefinitions reads the built-in definitions: every .cue file of
// definitions.FS, read as def apply reads a user's files
// (readDefinitionTree). A built-in that does not load is oamflow's bug, so
// the error is not a *UserError.
func builtinDefinitions() ([]*appfile.Definition, error) {
	defs, err := readDefinitionTree(definitions.FS)
	if err != nil {
		var ue *UserError
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("built-in definitions: %w", err)
	}
	return defs, nil
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// installCRDs creates every CRD the chart ships, or updates its spec when
// it differs from the served one (compared after the API server's
// defaults), and returns how many were created, updated and unchanged and
// their names.
func installCRDs(ctx context.Context, c client.Client) (map[string]int, []string, error) {
	entries, err := fs.ReadDir(chart.CRDs, "crds")
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int{}
	var names []string
	for _, e := range entries {
		data, err := fs.ReadFile(chart.CRDs, path.Join("crds", e.Name()))
		if err != nil {
			return nil, nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, nil, fmt.Errorf("CRD file %s: %w", e.Name(), err)
		}
		existing := &apiextensionsv1.CustomResourceDefinition{}
		switch err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, crd); err != nil {
				return nil, nil, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
			counts[verbCreated]++
		case err != nil:
			return nil, nil, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		case sameCRDSpec(existing, crd):
			counts[verbUnchanged]++
		default:
			existing.Spec = crd.Spec
			if err := c.Update(ctx, existing); err != nil {
				return nil, nil, fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
			counts[verbUpdated]++
		}
		names = append(names, crd.Name)
	}
	return counts, names, nil
}

// sameCRDSpec reports whether served's spec is what want's would be once
// the API server has set its defaults (apiextensions/v1 defaulting, the
// same functions the server runs).
func sameCRDSpec(served, want *apiextensionsv1.CustomResourceDefinition) bool {
	w := want.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(w)
	return equality.Semantic.DeepEqual(served.Spec, w.Spec)
}

// WaitEstablished waits until every named CRD has condition Established=True
// (c must know apiextensions.k8s.io/v1).
func WaitEstablished(ctx context.Context, c client.Client, names []string, timeout time.Duration) error {
	for _, n := range names {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				return false, nil //nolint:nilerr // not yet visible: keep polling until the timeout
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established within %s: %w", n, timeout, err)
		}
	}
	return nil
}
