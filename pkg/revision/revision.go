// Package revision keeps an Application's history as ApplicationRevisions:
// immutable snapshots, named "<app>-v<N>", of the Application together
// with every definition it used, labelled with their content hash
// (app.oam.dev/app-revision-hash). The controller renders a deployed
// revision from its snapshot, so editing a definition in the cluster does
// not silently change running apps; a new revision is made when the
// Application changes, when it asks for app.oam.dev/autoUpdate, or when its
// workflow is restarted — and only if the content hash differs from the
// latest revision's. app.oam.dev/publishVersion pins the revision: while it
// stays the same, spec edits are not deployed.
package revision

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/sharding"
)

// Name returns the name of revision n of app: "<app>-v<n>".
func Name(app string, n int64) string { return fmt.Sprintf("%s-v%d", app, n) }

// Number returns N of a revision named "<app>-v<N>", or an error naming
// the expected form.
func Number(app, name string) (int64, error) {
	s, ok := strings.CutPrefix(name, app+"-v")
	if !ok {
		return 0, fmt.Errorf("revision %q: want a name of the form %s-v<N>", name, app)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("revision %q: want a name of the form %s-v<N> with N ≥ 1", name, app)
	}
	return n, nil
}

// PublishVersion returns the app.oam.dev/publishVersion annotation of app
// ("" when unset).
func PublishVersion(app *v1beta1.Application) string {
	return app.Annotations[v1beta1.AnnoPublishVersion]
}

// AutoUpdate reports whether app asks to follow definition changes
// (annotation app.oam.dev/autoUpdate "true").
func AutoUpdate(app *v1beta1.Application) bool {
	return app.Annotations[v1beta1.AnnoAutoUpdate] == "true"
}

// Snapshot builds revision n of app (not yet created): the Application's
// name, namespace, labels (but the shard label), relevant annotations and
// spec, the definitions,
// the labels app.oam.dev/name and app.oam.dev/app-revision-hash (and the
// Application's shard label, sharding.Propagate), and an
// owner reference to the Application (so the API server's garbage collector
// removes revisions an interrupted deletion left behind).
func Snapshot(app *v1beta1.Application, defs Definitions, n int64, hash string) *v1beta1.ApplicationRevision {
	snap := v1beta1.Application{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        app.Name,
			Namespace:   app.Namespace,
			Labels:      relevantLabels(app.Labels),
			Annotations: relevantAnnotations(app.Annotations),
		},
		Spec: *app.Spec.DeepCopy(),
	}
	rev := &v1beta1.ApplicationRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "ApplicationRevision"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(app.Name, n),
			Namespace: app.Namespace,
			Labels: map[string]string{
				v1beta1.LabelAppName:         app.Name,
				v1beta1.LabelAppRevisionHash: hash,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1beta1.GroupVersion.String(),
				Kind:       "Application",
				Name:       app.Name,
				UID:        app.UID,
				Controller: ptr.To(true),
			}},
		},
		// The maps are the revision's own: defs may be a Recorder's, which
		// a later parse of the same reconcile adds to.
		Spec: v1beta1.ApplicationRevisionSpec{
			Application:             snap,
			ComponentDefinitions:    maps.Clone(defs.Components),
			TraitDefinitions:        maps.Clone(defs.Traits),
			PolicyDefinitions:       maps.Clone(defs.Policies),
			WorkflowStepDefinitions: maps.Clone(defs.WorkflowSteps),
		},
	}
	sharding.Propagate(app, rev)
	return rev
}

// Application returns the Application snapshotted in rev, with the live
// Application's identity (UID, generation) so that it can be rendered and
// deployed in place of live.
func Application(rev *v1beta1.ApplicationRevision, live *v1beta1.Application) *v1beta1.Application {
	app := rev.Spec.Application.DeepCopy()
	app.UID = live.UID
	app.Generation = live.Generation
	app.Namespace = live.Namespace
	app.Name = live.Name
	// The shard is the live Application's: a revision made by another
	// shard renders the same (its snapshot leaves the label out).
	sharding.Propagate(live, app)
	return app
}
