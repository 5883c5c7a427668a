package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/definitions"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/placement"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/revision"
)

// kubeVelaNamespace is where KubeVela keeps vela-core, its definitions,
// addons and cluster Secrets (its chart's default).
const kubeVelaNamespace = "vela-system"

// migrateOptions are the flags of `oamflow migrate from-kubevela`.
type migrateOptions struct {
	global        *GlobalOptions
	dryRun        bool
	allNamespaces bool
	velaNamespace string
}

func newMigrateCommand(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Take over what another delivery engine deployed",
	}
	o := &migrateOptions{global: g}
	from := &cobra.Command{
		Use:   "from-kubevela [--dry-run] [-n NAMESPACE | -A]",
		Short: "Check a KubeVela installation and prepare oamflow to take its Applications over in place",
		Long: `Check that vela-core is stopped and that the core.oam.dev CRDs serve what
oamflow reads, then print for every Application of -n NAMESPACE (or of every
namespace with -A) whether oamflow adopts it as it is ("adoptable, 0
changes"), would re-render it differently (the fields that would change), or
cannot take it over (KubeVela-only features: Terraform components, addons,
cluster-gateway members, definitions oamflow refuses), with what to do.

Without --dry-run it then registers KubeVela's member clusters with oamflow
(their cluster Secrets are copied from vela-system; nothing is changed in
them) and marks the Applications that can be taken over for adoption
(KubeVela's finalizer app.oam.dev/resource-tracker-finalizer, which oamflow's
controller removes once it adopted them). Nothing is applied: the controller
adopts (see docs/migrate-from-kubevela.md).

Exit status: 0 when every Application is adoptable with no change, 1 when
something is not supported or would change (or vela-core still runs), 2 on
errors.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	from.Flags().BoolVar(&o.dryRun, "dry-run", false, "only check and print; change nothing")
	from.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "check the Applications of every namespace")
	from.Flags().StringVar(&o.velaNamespace, "kubevela-namespace", kubeVelaNamespace, "the namespace KubeVela was installed in")
	cmd.AddCommand(from)
	return cmd
}

// migrateVerdict is what oamflow would do with one Application.
type migrateVerdict string

const (
	verdictAdoptable   migrateVerdict = "adoptable"
	verdictDifferent   migrateVerdict = "would re-render differently"
	verdictUnsupported migrateVerdict = "not supported"
)

// appReport is the outcome of checking one Application.
type appReport struct {
	ns, name string
	verdict  migrateVerdict
	objects  int
	// changes are the objects that would change, each with its fields.
	changes []string
	// reasons say what is not supported and what to do.
	reasons []string
}

func (o *migrateOptions) run(ctx context.Context, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, cfg, err := o.global.kubeClient(apiextensionsv1.AddToScheme)
	if err != nil {
		return err
	}
	problems, err := o.checkCluster(ctx, c)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintf(out, "cluster: %s\n", p)
	}
	if len(problems) == 0 {
		fmt.Fprintf(out, "cluster: vela-core is not running; the core.oam.dev CRDs are compatible\n")
	}

	list := &v1beta1.ApplicationList{}
	var opts []client.ListOption
	if !o.allNamespaces {
		opts = append(opts, client.InNamespace(o.global.ResolvedNamespace()))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	clients, err := o.memberClients(c, cfg)
	if err != nil {
		return err
	}
	builtins, err := appfile.NewFSSource(definitions.FS, ".")
	if err != nil {
		return fmt.Errorf("loading built-in definitions: %w", err)
	}
	var reports []appReport
	for i := range list.Items {
		r, err := o.checkApp(ctx, c, clients, builtins, &list.Items[i])
		if err != nil {
			return fmt.Errorf("Application %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
		}
		reports = append(reports, r)
		printAppReport(out, r)
	}
	counts := map[migrateVerdict]int{}
	for _, r := range reports {
		counts[r.verdict]++
	}
	fmt.Fprintf(out, "%s: %d adoptable with no change, %d would change, %d not supported\n",
		plural(len(reports), "Application"), counts[verdictAdoptable], counts[verdictDifferent], counts[verdictUnsupported])

	if !o.dryRun {
		if len(problems) > 0 {
			return userErrorf("nothing was changed: fix the cluster first (%s)", strings.Join(problems, "; "))
		}
		if err := o.registerClusters(ctx, c, out); err != nil {
			return err
		}
		for _, r := range reports {
			if r.verdict == verdictUnsupported {
				continue
			}
			if err := markForAdoption(ctx, c, r.ns, r.name, out); err != nil {
				return err
			}
		}
	}
	if len(problems) > 0 || counts[verdictDifferent] > 0 || counts[verdictUnsupported] > 0 {
		return &UserError{Err: errors.New("not every Application can be taken over as it is (see above)")}
	}
	return nil
}

// checkCluster reports what keeps oamflow from taking over now: a
// running vela-core (its Deployment has replicas, or its leader lease is
// held), and core.oam.dev CRDs that are missing or store a version
// oamflow does not serve.
func (o *migrateOptions) checkCluster(ctx context.Context, c client.Client) ([]string, error) {
	var problems []string
	deps := &appsv1.DeploymentList{}
	if err := c.List(ctx, deps, client.InNamespace(o.velaNamespace)); err != nil {
		return nil, fmt.Errorf("listing the Deployments of %s: %w", o.velaNamespace, err)
	}
	for _, d := range deps.Items {
		if !isVelaCore(&d) {
			continue
		}
		if (d.Spec.Replicas == nil || *d.Spec.Replicas > 0) || d.Status.Replicas > 0 {
			problems = append(problems, fmt.Sprintf("vela-core is running (Deployment %s/%s has replicas): stop it first (kubectl -n %s scale deployment %s --replicas=0); two controllers would fight over every Application",
				d.Namespace, d.Name, d.Namespace, d.Name))
		}
	}
	leases := &coordinationv1.LeaseList{}
	if err := c.List(ctx, leases, client.InNamespace(o.velaNamespace)); err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing the Leases of %s: %w", o.velaNamespace, err)
	}
	for _, l := range leases.Items {
		if !strings.HasPrefix(l.Name, "kubevela") || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
			continue
		}
		d := 15 * time.Second
		if l.Spec.LeaseDurationSeconds != nil {
			d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		if time.Since(l.Spec.RenewTime.Time) < d {
			problems = append(problems, fmt.Sprintf("KubeVela's leader lease %s/%s is held by %s (renewed %s ago): a vela-core still runs somewhere; stop it first",
				l.Namespace, l.Name, *l.Spec.HolderIdentity, time.Since(l.Spec.RenewTime.Time).Round(time.Second)))
		}
	}
	for _, name := range []string{"applications", "applicationrevisions", "resourcetrackers", "componentdefinitions", "traitdefinitions", "policydefinitions", "workflowstepdefinitions"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		full := name + "." + v1beta1.GroupVersion.Group
		if err := c.Get(ctx, client.ObjectKey{Name: full}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				problems = append(problems, fmt.Sprintf("CRD %s is missing: install oamflow's CRDs (oamflow install)", full))
				continue
			}
			return nil, fmt.Errorf("reading CRD %s: %w", full, err)
		}
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
		}
		if !served[v1beta1.GroupVersion.Version] {
			problems = append(problems, fmt.Sprintf("CRD %s does not serve %s: install oamflow's CRDs", full, v1beta1.GroupVersion.Version))
		}
		for _, v := range crd.Status.StoredVersions {
			if v != v1beta1.GroupVersion.Version {
				problems = append(problems, fmt.Sprintf("CRD %s has objects stored as %s, which oamflow does not serve: migrate them to %s with KubeVela's CRDs still installed (read and write each object, then drop %s from status.storedVersions)",
					full, v, v1beta1.GroupVersion.Version, v))
			}
		}
	}
	return problems, nil
}

// isVelaCore recognises KubeVela's controller Deployment by its name or
// image (kubevela-vela-core, oamdev/vela-core).
func isVelaCore(d *appsv1.Deployment) bool {
	if strings.Contains(d.Name, "vela-core") {
		return true
	}
	for _, ct := range d.Spec.Template.Spec.Containers {
		if strings.Contains(ct.Image, "vela-core") {
			return true
		}
	}
	return false
}

// memberClients reaches the hub and KubeVela's member clusters through
// their cluster Secrets in KubeVela's namespace (the same format as
// oamflow's).
func (o *migrateOptions) memberClients(c client.Client, cfg *rest.Config) (multicluster.ClusterClients, error) {
	reg, err := multicluster.NewRegistry(c, cfg, multicluster.WithSystemNamespace(o.velaNamespace))
	if err != nil {
		return nil, fmt.Errorf("reading KubeVela's clusters: %w", err)
	}
	return reg, nil
}

// checkApp says whether app can be taken over as it is.
func (o *migrateOptions) checkApp(ctx context.Context, c client.Client, clients multicluster.ClusterClients, builtins appfile.DefinitionSource, app *v1beta1.Application) (appReport, error) {
	r := appReport{ns: app.Namespace, name: app.Name, verdict: verdictAdoptable}
	unsupported := func(format string, args ...any) {
		r.verdict = verdictUnsupported
		r.reasons = append(r.reasons, fmt.Sprintf(format, args...))
	}
	if addon := app.Labels["addons.oam.dev/name"]; addon != "" || (app.Namespace == o.velaNamespace && strings.HasPrefix(app.Name, "addon-")) {
		if addon == "" {
			addon = strings.TrimPrefix(app.Name, "addon-")
		}
		unsupported("it is KubeVela's addon %q: oamflow does not manage addons; keep what the addon installed (its objects keep running) and install its definitions with oamflow def apply, or keep KubeVela for it", addon)
		return r, nil
	}
	for _, comp := range app.Spec.Components {
		tf, err := o.isTerraform(ctx, c, app.Namespace, comp.Type)
		if err != nil {
			return r, err
		}
		if tf {
			unsupported("component %q (type %q) is a Terraform component: oamflow renders CUE definitions only; keep the Terraform controller's Configuration objects and manage them with a k8s-objects component, or keep this Application on KubeVela", comp.Name, comp.Type)
		}
	}
	for _, svc := range app.Status.Services {
		if multicluster.IsLocal(svc.Cluster) {
			continue
		}
		if why, err := o.checkMember(ctx, c, svc.Cluster); err != nil {
			return r, err
		} else if why != "" {
			unsupported("component %q runs in cluster %q, %s", svc.Name, svc.Cluster, why)
		}
	}
	if r.verdict == verdictUnsupported {
		return r, nil
	}

	lr := app.Status.LatestRevision
	if lr == nil || lr.Name == "" {
		r.verdict = verdictDifferent
		r.changes = append(r.changes, "no revision deployed by KubeVela (status.latestRevision is empty): oamflow deploys it from scratch")
		return r, nil
	}
	latest, err := revision.NewManager(c, c).Get(ctx, app.Namespace, lr.Name)
	if err != nil {
		unsupported("%v", err)
		return r, nil
	}
	if latest == nil {
		unsupported("its ApplicationRevision %s/%s is missing: oamflow would make a new revision and run the workflow again", app.Namespace, lr.Name)
		return r, nil
	}
	src := appfile.Chain(appfile.NewClusterSource(c, app.Namespace, ""), builtins)
	snap := app
	if live, _, err := revision.NeedsLive(app, latest, false); err != nil {
		return r, err
	} else if !live {
		snap = revision.Application(latest, app)
	} else {
		r.changes = append(r.changes, fmt.Sprintf("the spec differs from KubeVela's revision %s: oamflow makes a new revision and runs the workflow", latest.Name))
	}
	af, _, err := appfile.Validate(ctx, snap, revision.Source(latest, src), nil)
	if err != nil {
		unsupported("oamflow refuses it: %v", err)
		return r, nil
	}
	pols, err := resourcekeeper.ParsePolicies(af.App.Spec.Policies)
	if err != nil {
		unsupported("oamflow refuses its policies: %v", err)
		return r, nil
	}
	n, err := revision.Number(app.Name, latest.Name)
	if err != nil {
		unsupported("%v", err)
		return r, nil
	}
	k, err := resourcekeeper.New(app, n, resourcekeeper.Options{Clients: clients, Trackers: c, Policies: pols})
	if err != nil {
		return r, err
	}
	if err := k.CheckTrackers(ctx); err != nil {
		unsupported("%v (oamflow leaves this Application untouched until it is repaired or deleted)", err)
		return r, nil
	}
	resolver, _ := clients.(placement.Resolver)
	if err := o.preview(ctx, app, af, latest.Name, k, resolver, &r); err != nil {
		return r, err
	}
	if r.verdict == verdictAdoptable && len(r.changes) > 0 {
		r.verdict = verdictDifferent
	}
	return r, nil
}

// preview renders every service of app's status where it runs (as the
// controller's adoption does) and compares what applying it would make of
// each object with the object as it is.
func (o *migrateOptions) preview(ctx context.Context, app *v1beta1.Application, af *appfile.AppFile, rev string, k *resourcekeeper.Keeper, resolver placement.Resolver, r *appReport) error {
	pls, _ := render.ServicePlacements(ctx, af, app.Status.Services, resolver)
	for _, pl := range pls {
		svc := pl.Service
		if comp := af.Component(svc.Name); len(comp.Inputs) > 0 || comp.Pending {
			r.changes = append(r.changes, fmt.Sprintf("component %q takes workflow inputs: not rendered here; oamflow adopts it at its next workflow run", svc.Name))
			continue
		}
		opts := render.Options{AppRevision: rev, Cluster: pl.Cluster, Namespace: pl.Namespace}
		res, err := render.RenderComponent(ctx, pl.AppFile, svc.Name, opts)
		if err != nil {
			r.verdict = verdictUnsupported
			r.reasons = append(r.reasons, fmt.Sprintf("component %q does not render with oamflow: %v", svc.Name, err))
			continue
		}
		for _, b := range render.Batches(res) {
			cl := b.Cluster
			changes, err := k.Preview(ctx, cl, b.Objects)
			if err != nil {
				return err
			}
			for _, ch := range changes {
				r.objects++
				what := ch.Object.Kind + " " + ch.Object.Name
				if ch.Object.Namespace != "" {
					what = ch.Object.Kind + " " + ch.Object.Namespace + "/" + ch.Object.Name
				}
				if !multicluster.IsLocal(ch.Object.Cluster) {
					what += " in cluster " + ch.Object.Cluster
				}
				switch {
				case ch.Refused != "":
					r.verdict = verdictUnsupported
					r.reasons = append(r.reasons, ch.Refused)
				case ch.Live == nil:
					r.changes = append(r.changes, what+": would be created")
				case ch.After != nil:
					if d := objectDiff(ch.Live.Object, ch.After.Object); len(d) > 0 {
						r.changes = append(r.changes, what+":\n      "+strings.Join(d, "\n      "))
					}
				}
			}
		}
	}
	return nil
}

// isTerraform reports whether component type typ is one of KubeVela's
// Terraform components: its ComponentDefinition (in the Application's
// namespace, KubeVela's or oamflow's) has a terraform schematic or renders
// a terraform.core.oam.dev Configuration. Read as unstructured: oamflow's
// schema has no terraform field.
func (o *migrateOptions) isTerraform(ctx context.Context, c client.Client, ns, typ string) (bool, error) {
	name, _, _ := strings.Cut(typ, "@")
	for _, where := range []string{ns, o.velaNamespace, "oamflow-system"} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ComponentDefinition"))
		if err := c.Get(ctx, client.ObjectKey{Namespace: where, Name: name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, fmt.Errorf("reading ComponentDefinition %s/%s: %w", where, name, err)
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "schematic", "terraform"); ok {
			return true, nil
		}
		api, _, _ := unstructured.NestedString(u.Object, "spec", "workload", "definition", "apiVersion")
		wt, _, _ := unstructured.NestedString(u.Object, "spec", "workload", "type")
		return strings.HasPrefix(api, "terraform.core.oam.dev/") || strings.HasSuffix(wt, ".terraform.core.oam.dev"), nil
	}
	return false, nil
}

// checkMember says why oamflow cannot reach KubeVela's member cluster
// name ("": it can): oamflow talks to a member's API server directly with
// the credentials of its cluster Secret, as KubeVela's X509Certificate and
// ServiceAccountToken clusters do; other kinds go through KubeVela's
// cluster-gateway.
func (o *migrateOptions) checkMember(ctx context.Context, c client.Client, name string) (string, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.velaNamespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("which has no cluster Secret in %s: join it with oamflow cluster join", o.velaNamespace), nil
		}
		return "", fmt.Errorf("reading cluster Secret %s/%s: %w", o.velaNamespace, name, err)
	}
	switch t := multicluster.CredentialType(s.Labels[v1beta1.LabelClusterCredType]); t {
	case multicluster.CredentialX509, multicluster.CredentialToken:
		return "", nil
	default:
		return fmt.Sprintf("a cluster-gateway member of credential type %q: oamflow reaches members directly (%s or %s); join it with oamflow cluster join", t, multicluster.CredentialX509, multicluster.CredentialToken), nil
	}
}

// registerClusters copies KubeVela's cluster Secrets oamflow can use into
// oamflow's system namespace; existing ones are left alone.
func (o *migrateOptions) registerClusters(ctx context.Context, c client.Client, out io.Writer) error {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(o.velaNamespace), client.HasLabels{v1beta1.LabelClusterCredType}); err != nil {
		return fmt.Errorf("listing KubeVela's cluster Secrets: %w", err)
	}
	for _, s := range list.Items {
		if t := multicluster.CredentialType(s.Labels[v1beta1.LabelClusterCredType]); t != multicluster.CredentialX509 && t != multicluster.CredentialToken {
			fmt.Fprintf(out, "cluster %s: not registered (credential type %q; join it with oamflow cluster join)\n", s.Name, t)
			continue
		}
		cp := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: multicluster.DefaultSystemNamespace, Labels: s.Labels, Annotations: s.Annotations},
			Type:       s.Type,
			Data:       s.Data,
		}
		err := c.Create(ctx, cp)
		switch {
		case apierrors.IsAlreadyExists(err):
			fmt.Fprintf(out, "cluster %s: already registered\n", s.Name)
		case err != nil:
			return fmt.Errorf("registering cluster %s: %w", s.Name, err)
		default:
			fmt.Fprintf(out, "cluster %s: registered\n", s.Name)
		}
	}
	return nil
}

// markForAdoption makes sure the Application carries KubeVela's
// finalizer, the mark oamflow's controller adopts by (KubeVela's
// Applications carry it already). Only metadata.finalizers is written:
// the spec, labels and annotations (the revision's content) stay.
func markForAdoption(ctx context.Context, c client.Client, ns, name string, out io.Writer) error {
	app := &v1beta1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return fmt.Errorf("reading Application %s/%s: %w", ns, name, err)
	}
	if controllerutil.ContainsFinalizer(app, v1beta1.FinalizerResourceTracker) {
		fmt.Fprintf(out, "%s/%s: marked for adoption\n", ns, name)
		return nil
	}
	base := app.DeepCopy()
	controllerutil.AddFinalizer(app, v1beta1.FinalizerResourceTracker)
	if err := c.Patch(ctx, app, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("marking Application %s/%s for adoption: %w", ns, name, err)
	}
	fmt.Fprintf(out, "%s/%s: marked for adoption\n", ns, name)
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func printAppReport(out io.Writer, r appReport) {
	switch r.verdict {
	case verdictAdoptable:
		fmt.Fprintf(out, "%s/%s: adoptable, 0 changes (%d objects)\n", r.ns, r.name, r.objects)
	case verdictDifferent:
		fmt.Fprintf(out, "%s/%s: %s (%s)\n", r.ns, r.name, r.verdict, plural(len(r.changes), "change"))
	default:
		fmt.Fprintf(out, "%s/%s: %s\n", r.ns, r.name, r.verdict)
	}
	for _, why := range r.reasons {
		fmt.Fprintf(out, "  - %s\n", why)
	}
	for _, ch := range r.changes {
		fmt.Fprintf(out, "  ~ %s\n", ch)
	}
}

// objectDiff lists the fields that differ between live and after, as
// "path: old -> new", leaving out what every write changes
// (managedFields, resourceVersion, generation) and oamflow's applied hash.
func objectDiff(live, after map[string]any) []string {
	clean := func(m map[string]any) map[string]any {
		cp := runtimeDeepCopy(m)
		if md, ok := cp["metadata"].(map[string]any); ok {
			for _, k := range []string{"managedFields", "resourceVersion", "generation"} {
				delete(md, k)
			}
			for _, k := range []string{"labels", "annotations"} {
				if l, ok := md[k].(map[string]any); ok {
					delete(l, resourcekeeper.LabelAppliedHash)
					if len(l) == 0 {
						delete(md, k)
					}
				}
			}
		}
		return cp
	}
	var out []string
	diffValues("", clean(live), clean(after), &out)
	sort.Strings(out)
	return out
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func diffValues(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValues(p, am[k], bm[k], out)
		}
		return
	}
	if reflect.DeepEqual(a, b) {
		return
	}
	if al, ok := a.([]any); ok {
		if bl, ok := b.([]any); ok && len(al) == len(bl) {
			for i := range al {
				diffValues(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
			}
			return
		}
	}
	switch {
	case a == nil:
		*out = append(*out, fmt.Sprintf("%s: added %v", path, b))
	case b == nil:
		*out = append(*out, fmt.Sprintf("%s: removed (was %v)", path, a))
	default:
		*out = append(*out, fmt.Sprintf("%s: %v -> %v", path, a, b))
	}
}
