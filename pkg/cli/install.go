package cli

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	chart "github.com/oamflow/oamflow/charts/oamflow"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/definition"
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
Safe to run again: existing objects are updated, nothing is deleted.`,
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
	out := o.g.Out
	names, err := installCRDs(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "CRDs: %d applied\n", len(names))
	if err := waitEstablished(ctx, c, names, o.timeout); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appfile.SystemNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", appfile.SystemNamespace, err)
	}
	fmt.Fprintf(out, "namespace %s ready\n", appfile.SystemNamespace)
	if o.skipDefinition {
		return nil
	}
	counts := map[string]int{}
	err = fs.WalkDir(definitions.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".cue" {
			return err
		}
		data, err := fs.ReadFile(definitions.FS, p)
		if err != nil {
			return err
		}
		f, err := definition.ParseCUE(p, data)
		if err != nil {
			return fmt.Errorf("built-in definition %s: %w", p, err)
		}
		obj, err := f.Object(appfile.SystemNamespace)
		if err != nil {
			return fmt.Errorf("built-in definition %s: %w", p, err)
		}
		verb, err := applyDefinition(ctx, c, obj, appfile.SystemNamespace)
		if err != nil {
			return err
		}
		counts[verb]++
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "built-in definitions in %s: %d created, %d updated, %d unchanged\n",
		appfile.SystemNamespace, counts["created"], counts["updated"], counts["unchanged"])
	return nil
}

// installCRDs creates or updates every CRD the chart ships and returns their names.
func installCRDs(ctx context.Context, c client.Client) ([]string, error) {
	entries, err := fs.ReadDir(chart.CRDs, "crds")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		data, err := fs.ReadFile(chart.CRDs, path.Join("crds", e.Name()))
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("CRD file %s: %w", e.Name(), err)
		}
		existing := &apiextensionsv1.CustomResourceDefinition{}
		switch err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, crd); err != nil {
				return nil, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		default:
			existing.Spec = crd.Spec
			if err := c.Update(ctx, existing); err != nil {
				return nil, fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
		names = append(names, crd.Name)
	}
	return names, nil
}

// waitEstablished waits until every named CRD has condition Established=True.
func waitEstablished(ctx context.Context, c client.Client, names []string, timeout time.Duration) error {
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
