package revision

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/leanwrite"
	"github.com/oamflow/oamflow/pkg/placement"
)

// DefaultLimit is how many revisions of an Application are kept when
// neither the controller flag nor a garbage-collect policy's
// applicationRevisionLimit says otherwise.
const DefaultLimit = 10

// Source reasons: why the Application must be parsed against the live
// definitions rather than rendered from the latest revision's snapshot.
const (
	ReasonFirstRevision         = "FirstRevision"
	ReasonApplicationChanged    = "ApplicationChanged"
	ReasonPublishVersionChanged = "PublishVersionChanged"
	ReasonAutoUpdate            = "AutoUpdate"
	ReasonRestart               = "Restart"
	// ReasonUnchanged and ReasonPublishVersionPinned say the snapshot serves.
	ReasonUnchanged            = "Unchanged"
	ReasonPublishVersionPinned = "PublishVersionPinned"
)

// NeedsLive decides whether app must be parsed against the definitions in
// the cluster (true: it may make a new revision) or rendered from the
// snapshot of latest (false), and says why with one of the Reason
// constants. latest may be nil (no revision yet). restart is true when the
// user asked to restart the workflow. Rules, in order:
//   - no revision yet: live;
//   - publishVersion set and equal to latest's, and no restart: snapshot
//     (the pin wins over spec edits and autoUpdate);
//   - publishVersion differs from latest's: live;
//   - restart, or app.oam.dev/autoUpdate "true": live;
//   - the Application content (AppHash) differs from latest's: live;
//   - otherwise: snapshot.
func NeedsLive(app *v1beta1.Application, latest *v1beta1.ApplicationRevision, restart bool) (bool, string, error) {
	if latest == nil {
		return true, ReasonFirstRevision, nil
	}
	pv, latestPV := PublishVersion(app), latest.Spec.Application.Annotations[v1beta1.AnnoPublishVersion]
	switch {
	case pv != "" && pv == latestPV && !restart:
		return false, ReasonPublishVersionPinned, nil
	case pv != latestPV:
		return true, ReasonPublishVersionChanged, nil
	case restart:
		return true, ReasonRestart, nil
	case AutoUpdate(app):
		return true, ReasonAutoUpdate, nil
	}
	now, err := AppHash(app)
	if err != nil {
		return false, "", err
	}
	then, err := AppHash(&latest.Spec.Application)
	if err != nil {
		return false, "", err
	}
	if now != then {
		return true, ReasonApplicationChanged, nil
	}
	return false, ReasonUnchanged, nil
}

// Manager reads and writes the ApplicationRevisions of Applications,
// reading through reader: the controller's is the observed-state client
// (package observed), which answers from its cache only when the context
// allows it.
type Manager struct {
	reader client.Reader
	writer client.Client
}

// NewManager returns a Manager reading through reader (an uncached
// reader, or one answering from a cache only when asked, as package
// observed's client) and writing through writer.
func NewManager(writer client.Client, reader client.Reader) *Manager {
	return &Manager{reader: reader, writer: writer}
}

// Get returns revision name of namespace, or nil when it does not exist.
func (m *Manager) Get(ctx context.Context, namespace, name string) (*v1beta1.ApplicationRevision, error) {
	rev := &v1beta1.ApplicationRevision{}
	if err := m.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rev); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ApplicationRevision %s/%s: %w", namespace, name, err)
	}
	if err := v1beta1.DecodeRevision(rev); err != nil {
		return nil, err
	}
	return rev, nil
}

// List returns the revisions of app (label app.oam.dev/name, named
// "<app>-v<N>"), oldest first.
func (m *Manager) List(ctx context.Context, app *v1beta1.Application) ([]v1beta1.ApplicationRevision, error) {
	list := &v1beta1.ApplicationRevisionList{}
	if err := m.reader.List(ctx, list, client.InNamespace(app.Namespace), client.MatchingLabels{v1beta1.LabelAppName: app.Name}); err != nil {
		return nil, fmt.Errorf("listing ApplicationRevisions of %s/%s: %w", app.Namespace, app.Name, err)
	}
	return Decoded(app.Name, list.Items)
}

// Decoded returns the revisions of app among revs, oldest first (Sorted),
// each decoded (v1beta1.DecodeRevision: KubeVela's compressed revisions
// expanded). A revision that cannot be decoded fails the whole list: a
// history with a hole must not be pruned or rolled back through.
func Decoded(app string, revs []v1beta1.ApplicationRevision) ([]v1beta1.ApplicationRevision, error) {
	out := Sorted(app, revs)
	for i := range out {
		if err := v1beta1.DecodeRevision(&out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Sorted returns the revisions of app among revs, oldest (lowest N) first;
// objects not named "<app>-v<N>" are left out.
func Sorted(app string, revs []v1beta1.ApplicationRevision) []v1beta1.ApplicationRevision {
	type numbered struct {
		n   int64
		rev v1beta1.ApplicationRevision
	}
	var ns []numbered
	for _, r := range revs {
		if n, err := Number(app, r.Name); err == nil {
			ns = append(ns, numbered{n, r})
		}
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].n < ns[j].n })
	out := make([]v1beta1.ApplicationRevision, len(ns))
	for i := range ns {
		out[i] = ns[i].rev
	}
	return out
}

// Create stores a new revision of app with defs and hash, numbered one
// above the highest existing revision — unless that revision already has
// this hash (an earlier reconcile made it but could not record it), which
// is returned instead. If another writer took the number first, the next
// number is tried (up to 5 times).
//
// The number after the app's status.latestRevision (1 without one) is
// tried first, without listing: it is free unless an earlier reconcile
// made it without recording it (or the status read is stale, or lost),
// and then the revisions are listed as above.
func (m *Manager) Create(ctx context.Context, app *v1beta1.Application, defs Definitions, sel placement.Selection, hash string) (*v1beta1.ApplicationRevision, error) {
	var next int64 = 1
	if lr := app.Status.LatestRevision; lr != nil {
		n, err := Number(app.Name, lr.Name)
		if err != nil {
			next = 0 // not ours to count from: list
		} else {
			next = n + 1
		}
	}
	if next > 0 {
		if rev, err := m.create(ctx, app, defs, sel, next, hash); rev != nil || err != nil {
			return rev, err
		}
	}
	revs, err := m.List(ctx, app)
	if err != nil {
		return nil, err
	}
	var n int64 = 1
	if len(revs) > 0 {
		last := &revs[len(revs)-1]
		if last.Labels[v1beta1.LabelAppRevisionHash] == hash {
			// Made by an earlier reconcile whose status write was lost.
			return last, nil
		}
		num, _ := Number(app.Name, last.Name)
		n = num + 1
	}
	for attempt := 0; attempt < 5; attempt, n = attempt+1, n+1 {
		if rev, err := m.create(ctx, app, defs, sel, n, hash); rev != nil || err != nil {
			return rev, err
		}
	}
	return nil, fmt.Errorf("creating a revision of %s/%s: revision numbers up to %d are taken", app.Namespace, app.Name, n-1)
}

// create writes revision n of app; nil without error when the number is
// taken.
func (m *Manager) create(ctx context.Context, app *v1beta1.Application, defs Definitions, sel placement.Selection, n int64, hash string) (*v1beta1.ApplicationRevision, error) {
	rev := Snapshot(app, defs, n, hash)
	if err := SetSelection(rev, sel); err != nil {
		return nil, err
	}
	err := m.writer.Create(ctx, rev)
	switch {
	case err == nil:
		return rev, nil
	case apierrors.IsAlreadyExists(err):
		return nil, nil
	}
	return nil, fmt.Errorf("creating ApplicationRevision %s/%s: %w", rev.Namespace, rev.Name, err)
}

// MarkSucceeded records in rev's status that its workflow succeeded at
// time at; it writes nothing when that is already recorded.
func (m *Manager) MarkSucceeded(ctx context.Context, rev *v1beta1.ApplicationRevision, at metav1.Time) error {
	if rev.Status.Succeeded {
		return nil
	}
	base := *rev.Status.DeepCopy()
	rev.Status.Succeeded = true
	rev.Status.WorkflowFinishedAt = &at
	if err := leanwrite.PatchStatus(ctx, m.writer, rev, base, rev.Status, false); err != nil {
		return fmt.Errorf("marking ApplicationRevision %s/%s succeeded: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}

// PruneCandidates returns the names of the revisions to delete so that at
// most limit remain: the oldest first, never one named in keep. A limit
// below 1 keeps one revision. revs must be sorted oldest first.
func PruneCandidates(revs []v1beta1.ApplicationRevision, limit int, keep ...string) []string {
	if limit < 1 {
		limit = 1
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	excess := len(revs) - limit
	var out []string
	for _, r := range revs {
		if excess <= 0 {
			break
		}
		if kept[r.Name] {
			continue
		}
		out = append(out, r.Name)
		excess--
	}
	return out
}

// Prune deletes the oldest revisions of app beyond limit (never those in
// keep) and returns the names deleted. It lists revisions only when
// knownLatest (N of the newest revision) exceeds limit, so a short history
// costs no request.
func (m *Manager) Prune(ctx context.Context, app *v1beta1.Application, knownLatest int64, limit int, keep ...string) ([]string, error) {
	if knownLatest <= int64(limit) {
		return nil, nil
	}
	revs, err := m.List(ctx, app)
	if err != nil {
		return nil, err
	}
	names := PruneCandidates(revs, limit, keep...)
	for _, name := range names {
		rev := &v1beta1.ApplicationRevision{}
		rev.Name, rev.Namespace = name, app.Namespace
		if err := m.writer.Delete(ctx, rev); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting old ApplicationRevision %s/%s: %w", app.Namespace, name, err)
		}
	}
	return names, nil
}

// DeleteAll deletes every revision of app.
func (m *Manager) DeleteAll(ctx context.Context, app *v1beta1.Application) error {
	revs, err := m.List(ctx, app)
	if err != nil {
		return err
	}
	for i := range revs {
		if err := m.writer.Delete(ctx, &revs[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ApplicationRevision %s/%s: %w", revs[i].Namespace, revs[i].Name, err)
		}
	}
	return nil
}

// LastSucceeded returns the newest revision older than current whose
// workflow succeeded, or nil. revs must be sorted oldest first. It is the
// target of a rollback.
func LastSucceeded(revs []v1beta1.ApplicationRevision, current string) *v1beta1.ApplicationRevision {
	idx := len(revs)
	for i := range revs {
		if revs[i].Name == current {
			idx = i
			break
		}
	}
	for i := idx - 1; i >= 0; i-- {
		if revs[i].Status.Succeeded {
			return &revs[i]
		}
	}
	return nil
}
