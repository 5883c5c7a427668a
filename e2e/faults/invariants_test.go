//go:build faults || e2e

package faults

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// clusters are the clients of the hub ("local") and members by name.
type clusters map[string]client.Client

// violations collects what the invariants found, safe for concurrent use.
type violations struct {
	mu     sync.Mutex
	list   []string
	checks int
}

func (v *violations) add(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = append(v.list, fmt.Sprintf(format, args...))
}

func (v *violations) checked(n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks += n
}

func (v *violations) snapshot() ([]string, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.list...), v.checks
}

// expected is, per cluster, the Deployments (name → image, replicas) an
// Application should have.
type expectedDeployment struct {
	image    string
	replicas int // 0: not checked
}

// sideSeen says kindGC's <app>-side was seen in this life of the
// Application: a revision holding it was deployed, so keepLegacyResource
// keeps it. (The spec asking for it is not enough: a change made a moment
// later may supersede it before any reconcile deploys it.)
func expectedDeployments(i int, w desired, sideSeen bool) map[string]map[string]expectedDeployment {
	name := appName(i)
	out := map[string]map[string]expectedDeployment{}
	if !w.exists {
		if kindOf(i) == kindGC {
			out[v1beta1.ClusterLocal] = map[string]expectedDeployment{name + "-keep": {image: "nginx:1"}}
		}
		return out
	}
	k := kindOf(i)
	set := map[string]expectedDeployment{name + "-web": {image: w.image, replicas: w.replicas}}
	if w.side || (k == kindGC && sideSeen) {
		set[name+"-side"] = expectedDeployment{image: "nginx:1", replicas: 1}
	}
	switch k {
	case kindGC:
		set[name+"-keep"] = expectedDeployment{image: "nginx:1", replicas: 1}
	case kindApplyOnce:
		r := 1
		if w.byHand > 0 {
			r = w.byHand
		}
		set[name+"-web"] = expectedDeployment{image: w.image, replicas: r}
	}
	if k == kindMulti {
		out[member1] = set
		if w.wide {
			out[member2] = set
		}
		return out
	}
	out[v1beta1.ClusterLocal] = set
	return out
}

// converged reports why Application i is not (yet) as w says: the
// Application itself, its Deployments on every cluster, its shared
// ConfigMap, its Helm release and its trackers. nil means converged.
func converged(ctx context.Context, cs clusters, uids *uidWatch, i int, all []desired) error {
	w := all[i]
	hub := cs[v1beta1.ClusterLocal]
	name := appName(i)
	app := &v1beta1.Application{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, app)
	switch {
	case !w.exists && err == nil:
		return fmt.Errorf("%s still exists (deleting since %v, finalizers %v)", name, app.DeletionTimestamp, app.Finalizers)
	case !w.exists && !apierrors.IsNotFound(err):
		return err
	case w.exists && err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case w.exists && (app.Status.Phase != common.ApplicationRunning || app.Status.ObservedGeneration != app.Generation):
		return fmt.Errorf("%s: phase %q at generation %d of %d", name, app.Status.Phase, app.Status.ObservedGeneration, app.Generation)
	}
	want := expectedDeployments(i, w, w.exists && uids.sideSeen(app.UID))
	for cluster, c := range cs {
		deps := &appsv1.DeploymentList{}
		if err := c.List(ctx, deps, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("%s: listing Deployments: %w", cluster, err)
		}
		got := map[string]appsv1.Deployment{}
		for _, d := range deps.Items {
			if d.Name == name+"-web" || d.Name == name+"-side" || d.Name == name+"-keep" {
				got[d.Name] = d
			}
		}
		for n, e := range want[cluster] {
			d, ok := got[n]
			if !ok {
				return fmt.Errorf("%s: Deployment %s missing (want image %s)", cluster, n, e.image)
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; img != e.image {
				return fmt.Errorf("%s: Deployment %s has image %s, want %s", cluster, n, img, e.image)
			}
			if e.replicas > 0 && (d.Spec.Replicas == nil || int(*d.Spec.Replicas) != e.replicas) {
				return fmt.Errorf("%s: Deployment %s has replicas %v, want %d", cluster, n, d.Spec.Replicas, e.replicas)
			}
		}
		for n := range got {
			if _, ok := want[cluster][n]; !ok {
				return fmt.Errorf("%s: Deployment %s exists, want none (%s %s, exists=%v)", cluster, n, kindOf(i), name, w.exists)
			}
		}
	}
	switch kindOf(i) {
	case kindShared:
		live := w.exists
		if p := pairOf(i, len(all)); p >= 0 {
			live = live || all[p].exists
		}
		cm := &corev1.ConfigMap{}
		err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sharedName(i)}, cm)
		switch {
		case live && err != nil:
			return fmt.Errorf("shared ConfigMap %s: %w (want it: a sharer exists)", sharedName(i), err)
		case !live && err == nil:
			return fmt.Errorf("shared ConfigMap %s exists, but neither sharer does", sharedName(i))
		case !live && !apierrors.IsNotFound(err):
			return err
		}
	case kindHelm:
		if err := helmRelease(ctx, hub, name+"-chart", w); err != nil {
			return err
		}
	}
	return trackersMatch(ctx, cs, i, w)
}

// helmRelease checks release's history (no pending-*, one deployed, no
// duplicate revision) and its Deployment's replicas.
func helmRelease(ctx context.Context, hub client.Client, release string, w desired) error {
	secrets := &corev1.SecretList{}
	if err := hub.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
		return err
	}
	if !w.exists {
		if len(secrets.Items) > 0 {
			return fmt.Errorf("helm release %s: %d history entries remain after the Application was deleted", release, len(secrets.Items))
		}
		return nil
	}
	revisions, deployed := map[string]bool{}, 0
	var history []string
	for _, s := range secrets.Items {
		st, rev := s.Labels["status"], s.Labels["version"]
		history = append(history, rev+":"+st)
		if strings.HasPrefix(st, "pending") {
			return fmt.Errorf("helm release %s: revision %s is %s", release, rev, st)
		}
		if revisions[rev] {
			return fmt.Errorf("helm release %s: revision %s twice", release, rev)
		}
		revisions[rev] = true
		if st == "deployed" {
			deployed++
		}
	}
	if deployed != 1 {
		sort.Strings(history)
		return fmt.Errorf("helm release %s: %d deployed revisions (history %v)", release, deployed, history)
	}
	d := &appsv1.Deployment{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-web"}, d); err != nil {
		return fmt.Errorf("helm release %s: %w", release, err)
	}
	if d.Spec.Replicas == nil || int(*d.Spec.Replicas) != w.replicas {
		return fmt.Errorf("helm release %s: Deployment has replicas %v, want replicaCount %d", release, d.Spec.Replicas, w.replicas)
	}
	return nil
}

// trackersMatch: every object the Application's ResourceTrackers list
// (not deleted) is live on its cluster, and every live object labelled
// as the Application's is listed; a deleted Application has no tracker.
func trackersMatch(ctx context.Context, cs clusters, i int, w desired) error {
	hub := cs[v1beta1.ClusterLocal]
	name := appName(i)
	rts := &v1beta1.ResourceTrackerList{}
	if err := hub.List(ctx, rts, client.MatchingLabels{v1beta1.LabelAppName: name, v1beta1.LabelAppNamespace: namespace}); err != nil {
		return err
	}
	if !w.exists {
		if len(rts.Items) > 0 {
			return fmt.Errorf("%s deleted but %d ResourceTrackers remain (%s, ...)", name, len(rts.Items), rts.Items[0].Name)
		}
		return nil
	}
	listed := map[string]bool{}
	for _, rt := range rts.Items {
		for _, m := range rt.Spec.ManagedResources {
			if m.Deleted || strings.HasPrefix(m.APIVersion, "helm.oamflow.dev/") {
				continue // a Helm release is a record, checked by helmRelease
			}
			cluster := m.Cluster
			if cluster == "" {
				cluster = v1beta1.ClusterLocal
			}
			key := cluster + "/" + m.Kind + "/" + m.Namespace + "/" + m.Name
			listed[key] = true
			c, ok := cs[cluster]
			if !ok {
				return fmt.Errorf("tracker %s lists %s on unknown cluster", rt.Name, key)
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(m.APIVersion, m.Kind))
			if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, obj); err != nil {
				if apierrors.IsNotFound(err) && (m.Kind == "Namespace" || m.Kind == "Secret") {
					continue
				}
				return fmt.Errorf("tracker %s lists %s: %w", rt.Name, key, err)
			}
		}
	}
	for cluster, c := range cs {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ConfigMapList{}} {
			if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{v1beta1.LabelAppName: name, v1beta1.LabelAppNamespace: namespace}); err != nil {
				return err
			}
			objs, _ := metaItems(list)
			for _, o := range objs {
				if strings.HasPrefix(o.GetName(), "bystander-") {
					continue
				}
				kind := "Deployment"
				if _, ok := list.(*corev1.ConfigMapList); ok {
					kind = "ConfigMap"
				}
				if key := cluster + "/" + kind + "/" + namespace + "/" + o.GetName(); !listed[key] {
					return fmt.Errorf("%s is labelled as %s's but no tracker lists it", key, name)
				}
			}
		}
	}
	return nil
}

func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

// uidWatch remembers, per life of an Application (its UID), the UID of
// the web Deployment on a cluster that always holds it: a change means
// oamflow deleted and recreated an object it had no reason to. It does
// the same for the shared ConfigMaps (checkShared).
type uidWatch struct {
	mu   sync.Mutex
	seen map[string]string
	// sides are the Application UIDs (lives) of kindGC whose <app>-side
	// Deployment was seen.
	sides map[types.UID]bool
	// shared is the last look at each shared ConfigMap, by name.
	shared map[string]sharedLook
}

// sharedLook is one look at a shared ConfigMap: its UID and the sharers
// it named (owner label or shared-by) that were alive around the read,
// by name, with the UID of that life.
type sharedLook struct {
	uid     types.UID
	holders map[string]types.UID
}

// checkShared looks once at the ConfigMap Application i shares with its
// pair (once per pair: from its first member). A sharer the last look
// saw holding it, alive (same life, not deleting) ever since, holds it
// still: the ConfigMap must be there with the same UID. Its other sharer
// leaving (deleted or recreated) must not take it away: GC hands it over.
func (u *uidWatch) checkShared(ctx context.Context, cs clusters, i, apps int, v *violations) {
	if kindOf(i) != kindShared || i%8 != 5 {
		return
	}
	p := pairOf(i, apps)
	hub := cs[v1beta1.ClusterLocal]
	alive := func() map[string]types.UID {
		out := map[string]types.UID{}
		for _, j := range []int{i, p} {
			a := &v1beta1.Application{}
			if j >= 0 && hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(j)}, a) == nil && a.DeletionTimestamp == nil {
				out[appName(j)] = a.UID
			}
		}
		return out
	}
	before := alive()
	cm := &corev1.ConfigMap{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sharedName(i)}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	gone := err != nil || cm.DeletionTimestamp != nil
	after := alive()
	u.mu.Lock()
	defer u.mu.Unlock()
	v.checked(1)
	if u.shared == nil {
		u.shared = map[string]sharedLook{}
	}
	if last, ok := u.shared[sharedName(i)]; ok {
		for app, life := range last.holders {
			if before[app] != life || after[app] != life || (!gone && cm.UID == last.uid) {
				continue
			}
			now := "deleted"
			if !gone {
				now = "recreated as uid " + string(cm.UID)
			}
			v.add("local: shared ConfigMap %s (uid %s) %s while %s (uid %s), which held it, lived", sharedName(i), last.uid, now, app, life)
			break
		}
	}
	if gone {
		delete(u.shared, sharedName(i))
		return
	}
	look := sharedLook{uid: cm.UID, holders: map[string]types.UID{}}
	names := []string{cm.Labels[v1beta1.LabelAppName]}
	for _, s := range strings.Split(cm.Annotations[resourcekeeper.AnnoSharedBy], ",") {
		names = append(names, strings.TrimPrefix(strings.TrimSpace(s), namespace+"/"))
	}
	for _, app := range names {
		if life, ok := before[app]; ok && after[app] == life {
			look.holders[app] = life
		}
	}
	u.shared[sharedName(i)] = look
}

func (u *uidWatch) sideSeen(app types.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sides[app]
}

// check looks at Application i once (it may be in any state).
func (u *uidWatch) check(ctx context.Context, cs clusters, i int, v *violations) {
	cluster := v1beta1.ClusterLocal
	if kindOf(i) == kindMulti {
		cluster = member1
	}
	hub, c := cs[v1beta1.ClusterLocal], cs[cluster]
	key := client.ObjectKey{Namespace: namespace, Name: appName(i)}
	before, after := &v1beta1.Application{}, &v1beta1.Application{}
	d := &appsv1.Deployment{}
	if hub.Get(ctx, key, before) != nil || before.DeletionTimestamp != nil ||
		c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(i) + "-web"}, d) != nil || d.DeletionTimestamp != nil ||
		hub.Get(ctx, key, after) != nil || after.UID != before.UID || after.DeletionTimestamp != nil {
		return
	}
	side := &appsv1.Deployment{}
	sideUp := kindOf(i) == kindGC && c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: appName(i) + "-side"}, side) == nil && side.DeletionTimestamp == nil
	k := cluster + "/" + string(before.UID)
	u.mu.Lock()
	defer u.mu.Unlock()
	v.checked(1)
	if u.seen == nil {
		u.seen, u.sides = map[string]string{}, map[types.UID]bool{}
	}
	if sideUp {
		u.sides[before.UID] = true
	}
	old, ok := u.seen[k]
	switch {
	case !ok:
		u.seen[k] = string(d.UID)
	case old != string(d.UID):
		v.add("%s: Deployment %s-web recreated while its Application (uid %s) lived: uid %s, then %s", cluster, appName(i), before.UID, old, d.UID)
		u.seen[k] = string(d.UID)
	}
}

// bystander is an object oamflow did not create, as first seen.
type bystander struct {
	cluster string
	obj     client.Object
}

// createBystanders creates, on every cluster, ConfigMaps that look like
// Applications' objects (their labels; one with a foreign owner) and a
// Deployment named and labelled like one, in namespace default and in
// namespace bystanders.
func createBystanders(ctx context.Context, cs clusters, apps int) ([]bystander, error) {
	var out []bystander
	for cluster, c := range cs {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bystanders"}})); err != nil {
			return nil, err
		}
		for i := range min(apps, 4) {
			labels := map[string]string{v1beta1.LabelAppName: appName(i), v1beta1.LabelAppNamespace: namespace, v1beta1.LabelAppComponent: appName(i) + "-web"}
			for _, ns := range []string{namespace, "bystanders"} {
				owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bystander-" + strconv.Itoa(i), Labels: labels},
					Data: map[string]string{"owner": "someone else"}}
				if err := c.Create(ctx, owner); err != nil {
					return nil, fmt.Errorf("%s: %w", cluster, err)
				}
				owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bystander-" + strconv.Itoa(i) + "-owned", Labels: labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
				if err := c.Create(ctx, owned); err != nil {
					return nil, fmt.Errorf("%s: %w", cluster, err)
				}
				out = append(out, bystander{cluster, owner}, bystander{cluster, owned})
			}
		}
		one := int32(1)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "bystander-web",
			Labels: map[string]string{v1beta1.LabelAppName: appName(0), v1beta1.LabelAppNamespace: namespace}},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bystander"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bystander"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/bystander:1"}}}}}}
		if err := c.Create(ctx, d); err != nil {
			return nil, fmt.Errorf("%s: %w", cluster, err)
		}
		out = append(out, bystander{cluster, d})
	}
	return out, nil
}

// checkBystanders: each bystander still exists with its UID, and its
// metadata and spec are as created (status may change: a Deployment's
// controller writes it).
func checkBystanders(ctx context.Context, cs clusters, list []bystander, v *violations) {
	for _, b := range list {
		v.checked(1)
		now := b.obj.DeepCopyObject().(client.Object)
		if err := cs[b.cluster].Get(ctx, client.ObjectKeyFromObject(b.obj), now); err != nil {
			v.add("%s: bystander %T %s/%s: %v", b.cluster, b.obj, b.obj.GetNamespace(), b.obj.GetName(), err)
			continue
		}
		if now.GetUID() != b.obj.GetUID() {
			v.add("%s: bystander %s/%s recreated (uid %s, was %s)", b.cluster, b.obj.GetNamespace(), b.obj.GetName(), now.GetUID(), b.obj.GetUID())
		}
		_, isDeployment := now.(*appsv1.Deployment) // its controller annotates it with its revision
		if now.GetGeneration() != b.obj.GetGeneration() || fmt.Sprint(now.GetLabels()) != fmt.Sprint(b.obj.GetLabels()) ||
			(!isDeployment && fmt.Sprint(now.GetAnnotations()) != fmt.Sprint(b.obj.GetAnnotations())) {
			v.add("%s: bystander %s/%s modified: generation %d (was %d), labels %v (were %v), annotations %v (were %v)", b.cluster,
				b.obj.GetNamespace(), b.obj.GetName(), now.GetGeneration(), b.obj.GetGeneration(), now.GetLabels(), b.obj.GetLabels(),
				now.GetAnnotations(), b.obj.GetAnnotations())
		}
		if cm, ok := now.(*corev1.ConfigMap); ok && fmt.Sprint(cm.Data) != fmt.Sprint(b.obj.(*corev1.ConfigMap).Data) {
			v.add("%s: bystander ConfigMap %s/%s data changed: %v", b.cluster, cm.Namespace, cm.Name, cm.Data)
		}
	}
}
