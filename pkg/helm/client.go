package helm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

func infoOf(r *release.Release) helmspec.ReleaseInfo {
	if r == nil {
		return helmspec.ReleaseInfo{}
	}
	ri := helmspec.ReleaseInfo{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Digest: r.Labels[helmspec.LabelDigest]}
	if r.Info != nil {
		ri.Status = r.Info.Status.String()
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		ri.Chart, ri.ChartVersion, ri.AppVersion = r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Chart.Metadata.AppVersion
	}
	return ri
}

// Client runs Helm operations for oamflow. All cluster access goes through
// its Factory; charts come from its ChartFetcher; Secrets and ConfigMaps
// from its Reader (the hub). Safe for concurrent use on different releases.
type Client struct {
	factory Factory
	charts  helmspec.ChartFetcher
	reader  client.Reader
	grace   time.Duration
	now     func() time.Time
	// ended remembers the releases this Client's own install or upgrade
	// left pending when it returned an error (a status write Helm could
	// not make): nobody is working on them, so Ensure recovers them at
	// once instead of after the grace period.
	ended *endedOps
}

// endedOps maps a release (cluster/namespace/name) to the revision an
// operation of this process left pending.
type endedOps struct {
	mu  sync.Mutex
	rev map[string]int
}

// maxEnded bounds endedOps: past it, the oldest knowledge is dropped (those
// releases are recovered after the grace period, as without it).
const maxEnded = 1024

func (e *endedOps) add(key string, rev int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.rev) >= maxEnded {
		clear(e.rev)
	}
	e.rev[key] = rev
}

// take reports whether rev of key was left pending by this process, and
// forgets key.
func (e *endedOps) take(key string, rev int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.rev[key]
	delete(e.rev, key)
	return ok && r == rev
}

func releaseKey(req helmspec.Request) string {
	return req.Cluster + "/" + req.Spec.Release.Namespace + "/" + req.Spec.Release.Name
}

// noteEnded remembers the revision rel (what an install or upgrade that
// failed returned) of req's release: should the release be pending at that
// revision, the operation that made it so has ended. Not when ctx ended
// the operation: Helm may still be working on it.
func (c *Client) noteEnded(ctx context.Context, req helmspec.Request, rel *release.Release) {
	if rel != nil && ctx.Err() == nil {
		c.ended.add(releaseKey(req), rel.Version)
	}
}

// ClientOption configures NewClient.
type ClientOption func(*Client)

// WithPendingGracePeriod sets how long a pending-install/upgrade/rollback
// release is left alone before it is considered stuck (default 5m, or the
// spec's timeout when that is longer).
func WithPendingGracePeriod(d time.Duration) ClientOption { return func(c *Client) { c.grace = d } }

// WithClock sets the clock used to age pending releases.
func WithClock(now func() time.Time) ClientOption { return func(c *Client) { c.now = now } }

// NewClient returns a Client.
func NewClient(factory Factory, charts helmspec.ChartFetcher, reader client.Reader, opts ...ClientOption) *Client {
	c := &Client{factory: factory, charts: charts, reader: reader, grace: 5 * time.Minute, now: time.Now, ended: &endedOps{rev: map[string]int{}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

type desired = helmspec.Desired

func (c *Client) prepare(ctx context.Context, req helmspec.Request) (*desired, error) {
	return helmspec.Prepare(ctx, c.charts, c.reader, req)
}

// Digest returns the desired-state digest of req (fetching its chart and
// values): the value LabelDigest will have after Ensure.
func (c *Client) Digest(ctx context.Context, req helmspec.Request) (string, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		return "", err
	}
	return d.Digest, nil
}

func (c *Client) config(ctx context.Context, cluster, namespace string) (*action.Configuration, error) {
	return c.factory.For(ctx, cluster, namespace)
}

// last returns the newest revision of name, or nil when there is none.
func last(cfg *action.Configuration, name string) (*release.Release, error) {
	r, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history of release %q: %w", name, err)
	}
	return r, nil
}

// releaseLabels are the custom labels of a revision made for req: the
// desired-state digest and, with an owner, the owning Application.
func releaseLabels(req helmspec.Request, d *desired) map[string]string {
	l := map[string]string{helmspec.LabelDigest: d.Digest}
	if o := req.Owner; o != nil && !o.IsZero() {
		l[helmspec.LabelOwnerName], l[helmspec.LabelOwnerNamespace] = o.Name, o.Namespace
	}
	return l
}

// Owner reads who owns release name in namespace on cluster.
func (c *Client) Owner(ctx context.Context, cluster, namespace, name string) (helmspec.ReleaseOwner, error) {
	cfg, err := c.config(ctx, cluster, namespace)
	if err != nil {
		return helmspec.ReleaseOwner{}, err
	}
	cur, err := last(cfg, name)
	if err != nil || cur == nil {
		return helmspec.ReleaseOwner{}, err
	}
	return helmspec.ReleaseOwner{Exists: true, Owner: helmspec.OwnerOf(cur.Labels), Oamflow: cur.Labels[helmspec.LabelDigest] != "", Release: infoOf(cur)}, nil
}

// checkOwner refuses cur (a release's newest revision, or nil) when req
// names an owner and cur records another Application. A release that
// records none is left to the caller's judgement (the resource keeper
// adopts one only under a take-over rule).
func checkOwner(req helmspec.Request, cur *release.Release) error {
	if req.Owner == nil || cur == nil {
		return nil
	}
	if o := helmspec.OwnerOf(cur.Labels); !o.IsZero() && o != *req.Owner {
		return &helmspec.NotOwnedError{Namespace: cur.Namespace, Name: cur.Name, Owner: o}
	}
	return nil
}

// Install installs req's release; it fails if the release exists.
func (c *Client) Install(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		return helmspec.Result{}, err
	}
	cfg, err := c.config(ctx, req.Cluster, req.Spec.Release.Namespace)
	if err != nil {
		return helmspec.Result{}, err
	}
	return c.install(ctx, cfg, req, d, false)
}

func (c *Client) install(ctx context.Context, cfg *action.Configuration, req helmspec.Request, d *desired, replace bool) (helmspec.Result, error) {
	s := req.Spec
	in := action.NewInstall(cfg)
	in.ReleaseName = s.Release.Name
	in.Namespace = s.Release.Namespace
	// The Application's own namespace exists on the hub (the Application
	// is in it), and an identity limited to its namespace may not create
	// namespaces: it is created only where it is missing (a member cluster).
	in.CreateNamespace = s.Options.EffectiveCreateNamespace() && (s.Release.Namespace != req.Namespace || namespaceMissing(ctx, cfg, s.Release.Namespace))
	in.Timeout = s.Options.EffectiveTimeout()
	in.Wait = s.Options.Wait
	in.WaitForJobs = s.Options.Wait
	in.Atomic = s.Options.Atomic
	in.SkipCRDs = s.Options.EffectiveSkipCRDs()
	in.DisableHooks = s.Options.SkipHooks
	in.Replace = replace
	in.Labels = releaseLabels(req, d)
	var rel *release.Release
	err := helmspec.Safely("helm install", func() error {
		var ierr error
		rel, ierr = in.RunWithContext(ctx, d.Chart.Chart, d.Values)
		return ierr
	})
	if err != nil {
		if renderFailure(err) {
			// Helm returns the release it meant to create; it was not stored.
			return helmspec.Result{}, renderFailed("install", s, d, err)
		}
		c.noteEnded(ctx, req, rel)
		return helmspec.Result{Release: infoOf(rel)}, fmt.Errorf("install release %s/%s (chart %s): %w", s.Release.Namespace, s.Release.Name, d.Chart.Ref, err)
	}
	return helmspec.Result{Action: helmspec.ActionInstalled, Release: infoOf(rel)}, nil
}

// renderFailed wraps err, a render failure of an install or upgrade
// (renderFailure), in *RenderError, saying which release and chart, that
// nothing was changed, and Helm's message.
func renderFailed(op string, s *helmspec.Spec, d *desired, err error) error {
	return fmt.Errorf("%s release %s/%s: chart %s does not render with these values (nothing was applied; fix the values or the chart): %w",
		op, s.Release.Namespace, s.Release.Name, d.Chart.Ref, &helmspec.RenderError{Err: err})
}

// Upgrade upgrades req's release to the desired chart and values, whatever
// its digest; it fails when the release does not exist.
func (c *Client) Upgrade(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		return helmspec.Result{}, err
	}
	cfg, err := c.config(ctx, req.Cluster, req.Spec.Release.Namespace)
	if err != nil {
		return helmspec.Result{}, err
	}
	cur, err := last(cfg, req.Spec.Release.Name)
	if err != nil {
		return helmspec.Result{}, err
	}
	if err := checkOwner(req, cur); err != nil {
		return helmspec.Result{Release: infoOf(cur)}, err
	}
	return c.upgrade(ctx, cfg, req, d)
}

func (c *Client) upgrade(ctx context.Context, cfg *action.Configuration, req helmspec.Request, d *desired) (helmspec.Result, error) {
	s := req.Spec
	up := action.NewUpgrade(cfg)
	up.Namespace = s.Release.Namespace
	up.Timeout = s.Options.EffectiveTimeout()
	up.Wait = s.Options.Wait
	up.WaitForJobs = s.Options.Wait
	up.Atomic = s.Options.Atomic
	up.MaxHistory = s.Options.EffectiveMaxHistory()
	up.SkipCRDs = s.Options.EffectiveSkipCRDs()
	up.DisableHooks = s.Options.SkipHooks
	up.Force = s.Options.Force
	up.Recreate = s.Options.RecreatePods
	up.CleanupOnFail = s.Options.CleanupOnFail
	// The values are always complete: never let Helm reuse the old ones
	// (it does when the new values are empty and neither flag is set).
	up.ResetValues = true
	up.Labels = releaseLabels(req, d)
	var rel *release.Release
	err := helmspec.Safely("helm upgrade", func() error {
		var uerr error
		rel, uerr = up.RunWithContext(ctx, s.Release.Name, d.Chart.Chart, d.Values)
		return uerr
	})
	if err != nil {
		if renderFailure(err) {
			return helmspec.Result{}, renderFailed("upgrade", s, d, err)
		}
		c.noteEnded(ctx, req, rel)
		return helmspec.Result{Release: infoOf(rel)}, fmt.Errorf("upgrade release %s/%s (chart %s): %w", s.Release.Namespace, s.Release.Name, d.Chart.Ref, err)
	}
	return helmspec.Result{Action: helmspec.ActionUpgraded, Release: infoOf(rel)}, nil
}

// Ensure brings the release to the desired state and is what a reconciler
// calls on every pass:
//   - no release (or only an uninstalled one): install;
//   - deployed with the desired digest: nothing (ActionUnchanged, no new
//     Helm revision);
//   - deployed with another digest, failed (including a failed first
//     install) or superseded: upgrade; a successful upgrade of a failed
//     release sets Result.Recovery;
//   - pending-* younger than the grace period: ActionPending with
//     ErrOperationInProgress; older, or left pending by this Client's own
//     install or upgrade that returned an error (Helm could not write the
//     release's final status): recovered first (see recoverPending), with
//     Result.Recovery saying what was done.
func (c *Client) Ensure(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		return helmspec.Result{}, err
	}
	s := req.Spec
	cfg, err := c.config(ctx, req.Cluster, s.Release.Namespace)
	if err != nil {
		return helmspec.Result{}, err
	}
	hist, cur, err := history(cfg, s.Release.Name)
	if err != nil {
		return helmspec.Result{}, err
	}
	if err := checkOwner(req, cur); err != nil {
		return helmspec.Result{Release: infoOf(cur)}, err
	}
	if err := supersedeStale(cfg, hist); err != nil {
		return helmspec.Result{Release: infoOf(cur)}, err
	}
	var recovery string
	if cur != nil && cur.Info.Status.IsPending() {
		grace := c.grace
		if t := s.Options.EffectiveTimeout(); t > grace {
			grace = t
		}
		age := c.now().Sub(cur.Info.LastDeployed.Time)
		if age < grace && !c.ended.take(releaseKey(req), cur.Version) {
			return helmspec.Result{Action: helmspec.ActionPending, Release: infoOf(cur), RetryAfter: grace - age},
				fmt.Errorf("release %s/%s is %s (revision %d, %s old; recovery after %s): %w",
					cur.Namespace, cur.Name, cur.Info.Status, cur.Version, age.Round(time.Second), grace, helmspec.ErrOperationInProgress)
		}
		recovery, err = c.recoverPending(cfg, req, cur, age)
		if err != nil {
			return helmspec.Result{Release: infoOf(cur), Recovery: recovery}, err
		}
		if cur, err = last(cfg, s.Release.Name); err != nil {
			return helmspec.Result{Recovery: recovery}, err
		}
	}
	var res helmspec.Result
	switch {
	case cur == nil:
		res, err = c.install(ctx, cfg, req, d, false)
	case cur.Info.Status == release.StatusUninstalled:
		res, err = c.install(ctx, cfg, req, d, true)
	case cur.Info.Status == release.StatusDeployed && cur.Labels[helmspec.LabelDigest] == d.Digest:
		res = helmspec.Result{Action: helmspec.ActionUnchanged, Release: infoOf(cur)}
		if o := req.Owner; o != nil && !o.IsZero() && helmspec.OwnerOf(cur.Labels) != *o {
			// Adopted as it is: record the owner on the current revision
			// (no new revision, nothing redeployed).
			cur.Labels = releaseLabels(req, d)
			if err := cfg.Releases.Update(cur); err != nil {
				return helmspec.Result{Release: infoOf(cur)}, fmt.Errorf("recording the owner of release %s/%s: %w", cur.Namespace, cur.Name, err)
			}
		}
	default:
		failed := cur.Info.Status == release.StatusFailed && recovery == ""
		if failed {
			ctrl.LoggerFrom(ctx).Info("upgrading failed helm release", "release", cur.Name, "namespace", cur.Namespace, "revision", cur.Version)
		}
		res, err = c.upgrade(ctx, cfg, req, d)
		if failed && err == nil {
			recovery = fmt.Sprintf("release %s/%s revision %d had failed: upgraded to revision %d", cur.Namespace, cur.Name, cur.Version, res.Release.Revision)
		}
	}
	res.Recovery = recovery
	if err == nil && res.Action != helmspec.ActionUnchanged {
		if hist, _, err = history(cfg, s.Release.Name); err == nil {
			err = supersedeStale(cfg, hist)
		}
	}
	return res, err
}

// supersedeStale marks superseded every deployed revision in hist, the
// history of one release, but the newest. Helm records the previous
// revision as superseded after an upgrade or rollback and ignores a
// failure of that write (a conflict, a throttled or dropped request),
// leaving two revisions "deployed" that no later Helm operation repairs; a
// reconciler retrying against a busy API server meets that. Ensure runs
// the repair on every pass (level-triggered) and returns its error so the
// step retries.
func supersedeStale(cfg *action.Configuration, hist []*release.Release) error {
	var newest *release.Release
	for _, r := range hist {
		if r.Info != nil && r.Info.Status == release.StatusDeployed && (newest == nil || r.Version > newest.Version) {
			newest = r
		}
	}
	for _, r := range hist {
		if r == newest || r.Info == nil || r.Info.Status != release.StatusDeployed {
			continue
		}
		r.Info.Status = release.StatusSuperseded
		r.Info.Description = fmt.Sprintf("oamflow: superseded by revision %d (Helm had left it deployed)", newest.Version)
		if err := cfg.Releases.Update(r); err != nil {
			return fmt.Errorf("mark revision %d of release %s/%s superseded by %d: %w", r.Version, r.Namespace, r.Name, newest.Version, err)
		}
	}
	return nil
}

// history reads every stored revision of release name and the newest
// (nil, nil when there is none).
func history(cfg *action.Configuration, name string) ([]*release.Release, *release.Release, error) {
	hist, err := cfg.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read history of release %q: %w", name, err)
	}
	var cur *release.Release
	for _, r := range hist {
		if cur == nil || r.Version > cur.Version {
			cur = r
		}
	}
	return hist, cur, nil
}

// recoverPending repairs a release stuck in a pending state (a controller
// died mid-operation): the stuck revision is marked failed; for
// pending-upgrade/pending-rollback with an earlier deployed revision, that
// revision is rolled back to. Ensure then upgrades to the desired state
// (Helm allows an upgrade over a failed release, so a stuck first install
// is reinstalled that way).
func (c *Client) recoverPending(cfg *action.Configuration, req helmspec.Request, stuck *release.Release, age time.Duration) (string, error) {
	from := stuck.Info.Status
	stuck.Info.Status = release.StatusFailed
	stuck.Info.Description = fmt.Sprintf("oamflow: marked failed after %s in %s", age.Round(time.Second), from)
	if err := cfg.Releases.Update(stuck); err != nil {
		return "", fmt.Errorf("mark stuck release %s/%s revision %d failed: %w", stuck.Namespace, stuck.Name, stuck.Version, err)
	}
	what := fmt.Sprintf("release %s/%s revision %d was stuck in %s for %s: marked it failed", stuck.Namespace, stuck.Name, stuck.Version, from, age.Round(time.Second))
	deployed, err := cfg.Releases.Deployed(stuck.Name)
	if from == release.StatusPendingInstall || err != nil || deployed == nil {
		return what + " and reinstalling it", nil
	}
	rb := action.NewRollback(cfg)
	rb.Version = deployed.Version
	rb.Timeout = req.Spec.Options.EffectiveTimeout()
	rb.MaxHistory = req.Spec.Options.EffectiveMaxHistory()
	rb.DisableHooks = req.Spec.Options.SkipHooks
	if err := helmspec.Safely("helm rollback", func() error { return rb.Run(stuck.Name) }); err != nil {
		return what, fmt.Errorf("roll back stuck release %s/%s to revision %d: %w", stuck.Namespace, stuck.Name, deployed.Version, err)
	}
	return fmt.Sprintf("%s and rolled back to revision %d", what, deployed.Version), nil
}

// Rollback rolls release name in namespace back to revision (0 = the
// previous one). opts supplies timeout, wait, maxHistory and skipHooks.
func (c *Client) Rollback(ctx context.Context, cluster, namespace, name string, revision int, opts helmspec.Options) (helmspec.Result, error) {
	cfg, err := c.config(ctx, cluster, namespace)
	if err != nil {
		return helmspec.Result{}, err
	}
	rb := action.NewRollback(cfg)
	rb.Version = revision
	rb.Timeout = opts.EffectiveTimeout()
	rb.Wait = opts.Wait
	rb.MaxHistory = opts.EffectiveMaxHistory()
	rb.DisableHooks = opts.SkipHooks
	rb.CleanupOnFail = opts.CleanupOnFail
	if err := helmspec.Safely("helm rollback", func() error { return rb.Run(name) }); err != nil {
		return helmspec.Result{}, fmt.Errorf("roll back release %s/%s: %w", namespace, name, err)
	}
	cur, err := last(cfg, name)
	if err != nil {
		return helmspec.Result{}, err
	}
	return helmspec.Result{Action: helmspec.ActionRolledBack, Release: infoOf(cur)}, nil
}

// Uninstall removes release name from namespace with its history; a
// missing release gives ActionNotFound and no error.
func (c *Client) Uninstall(ctx context.Context, cluster, namespace, name string, opts helmspec.Options) (helmspec.Result, error) {
	return c.uninstall(ctx, cluster, namespace, name, nil, opts)
}

// UninstallOwned is Uninstall of a release owner owns: one recording
// another Application, or none and not made by oamflow, is left installed
// (ActionNotOwned with a *NotOwnedError). A release oamflow installed
// before releases recorded their owner (LabelDigest, no owner) counts as
// the caller's: callers uninstall only releases they track.
func (c *Client) UninstallOwned(ctx context.Context, cluster, namespace, name string, owner helmspec.Owner, opts helmspec.Options) (helmspec.Result, error) {
	return c.uninstall(ctx, cluster, namespace, name, &owner, opts)
}

func (c *Client) uninstall(ctx context.Context, cluster, namespace, name string, owner *helmspec.Owner, opts helmspec.Options) (helmspec.Result, error) {
	cfg, err := c.config(ctx, cluster, namespace)
	if err != nil {
		return helmspec.Result{}, err
	}
	cur, err := last(cfg, name)
	if err != nil {
		return helmspec.Result{}, err
	}
	if cur == nil {
		return helmspec.Result{Action: helmspec.ActionNotFound, Release: helmspec.ReleaseInfo{Name: name, Namespace: namespace}}, nil
	}
	if owner != nil {
		o := helmspec.OwnerOf(cur.Labels)
		legacy := o.IsZero() && cur.Labels[helmspec.LabelDigest] != ""
		if o != *owner && !legacy {
			return helmspec.Result{Action: helmspec.ActionNotOwned, Release: infoOf(cur)}, &helmspec.NotOwnedError{Namespace: namespace, Name: name, Owner: o}
		}
	}
	un := action.NewUninstall(cfg)
	un.Timeout = opts.EffectiveTimeout()
	un.Wait = opts.Wait
	un.DisableHooks = opts.SkipHooks
	un.IgnoreNotFound = true
	if err := helmspec.Safely("helm uninstall", func() error { _, uerr := un.Run(name); return uerr }); err != nil {
		return helmspec.Result{Release: infoOf(cur)}, fmt.Errorf("uninstall release %s/%s: %w", namespace, name, err)
	}
	info := infoOf(cur)
	info.Status = release.StatusUninstalled.String()
	return helmspec.Result{Action: helmspec.ActionUninstalled, Release: info}, nil
}

// Template renders req's chart client-side (`helm template`: no cluster
// access, default capabilities) and returns the manifest objects in
// manifest order, then hooks (unless skipHooks; test hooks unless
// skipTests is false). CRDs from crds/ come first unless skipped.
func (c *Client) Template(ctx context.Context, req helmspec.Request) ([]*unstructured.Unstructured, error) {
	d, err := c.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return helmspec.RenderChart(req.Spec, d)
}

// namespaceMissing reports whether the cluster of cfg answers that
// namespace does not exist. Any other answer (it exists, the identity may
// not read namespaces, an error) is false: Helm then installs without
// creating it, and the install itself reports what is wrong.
func namespaceMissing(ctx context.Context, cfg *action.Configuration, namespace string) bool {
	cs, err := cfg.KubernetesClientSet()
	if err != nil {
		return false
	}
	_, err = cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// Client is the SDK's implementation of the release contract.
var _ helmspec.Releases = (*Client)(nil)
