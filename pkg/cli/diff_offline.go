package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
	"github.com/oamflow/oamflow/pkg/multicluster"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
)

// readLiveObjects reads the objects of YAML/JSON files and folders (not
// recursive): multi-document files and Lists item by item.
func readLiveObjects(paths []string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, userErrorf("--live: %v", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, userErrorf("--live: %v", err)
		}
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, userErrorf("--live: %v", err)
		}
		objs, err := helmspec.ParseManifest(string(data))
		if err != nil {
			return nil, userErrorf("--live %s: %v", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// liveCluster is the cluster a live object was read from: its
// app.oam.dev/cluster label (oamflow stamps it on what it delivers to
// members), else the hub.
func liveCluster(obj *unstructured.Unstructured) string {
	if c := obj.GetLabels()[v1beta1.LabelAppCluster]; c != "" && !multicluster.IsLocal(c) {
		return c
	}
	return v1beta1.ClusterLocal
}

// compareOffline compares the rendered objects of di with live objects
// on the fields the render sets (see the --offline help), and judges what
// garbage collection would do with the Application's live objects the
// render no longer has.
func compareOffline(di *diffInput, live []*unstructured.Unstructured) (*diffReport, error) {
	pols, err := resourcekeeper.ParsePolicies(di.af.App.Spec.Policies)
	if err != nil {
		return nil, userErrorf("%v", err)
	}
	app := di.app
	k, err := resourcekeeper.New(app, di.revision, resourcekeeper.Options{Clients: multicluster.HubOnly{}, Policies: pols})
	if err != nil {
		return nil, err
	}
	index := map[string]*unstructured.Unstructured{}
	for _, obj := range live {
		index[liveCluster(obj)+"|"+objectKey(obj)] = obj
	}
	used := map[string]bool{}
	rep := &diffReport{Application: app.Namespace + "/" + app.Name, Revision: "(offline)", NotPlanned: di.notPlanned}
	for _, cl := range di.clusters {
		cd := rep.cluster(cl)
		for _, it := range di.items[cl] {
			od := diffEntry{Step: it.step, Component: it.component, APIVersion: it.obj.GetAPIVersion(), Kind: it.obj.GetKind(),
				Namespace: it.obj.GetNamespace(), Name: it.obj.GetName()}
			if helmspec.IsHelmRelease(it.obj) {
				od.Action, od.Message = actionNotCompared, "Helm releases are not compared offline"
				cd.Objects = append(cd.Objects, od)
				continue
			}
			key := cl + "|" + objectKey(it.obj)
			used[key] = true
			desired := offlineDesired(it.obj)
			lv := index[key]
			owner := ""
			if lv != nil {
				l := lv.GetLabels()
				if n, ns := l[v1beta1.LabelAppName], l[v1beta1.LabelAppNamespace]; n != "" && (n != app.Name || ns != app.Namespace) {
					owner = ns + "/" + n
				}
			}
			switch {
			case lv == nil:
				od.Action, od.Diff = actionCreate, createText(desired)
			case owner != "":
				od.Action, od.Owner = actionConflict, owner
				od.Message = fmt.Sprintf("owned by Application %s; a shared-resource policy selecting it in both Applications shares it", owner)
			default:
				set := shapeOf(desired.Object)
				l, _ := pruneTo(lv.Object, set).(map[string]any)
				d, _ := pruneTo(desired.Object, set).(map[string]any)
				l, d = withoutBookkeeping(l), withoutBookkeeping(d)
				if isSecret(desired) {
					maskSecretData(l, d)
				}
				if diff := unifiedDiff(l, d); diff != "" {
					od.Action, od.Diff = actionUpdate, diff
				} else {
					od.Action = actionUnchanged
				}
			}
			noteCondition(&od, it)
			cd.Objects = append(cd.Objects, od)
		}
	}
	for _, obj := range live {
		key := liveCluster(obj) + "|" + objectKey(obj)
		l := obj.GetLabels()
		if used[key] || l[v1beta1.LabelAppName] != app.Name || l[v1beta1.LabelAppNamespace] != app.Namespace {
			continue
		}
		action, to := k.JudgeGC(obj)
		if action == "" {
			continue
		}
		od := diffEntry{Component: l[v1beta1.LabelAppComponent], APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(),
			Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if od.Component == "" && len(di.notPlanned) > 0 {
			od.Action, od.Message = actionNotCompared, notPlannedGC(di.notPlanned)
		} else {
			gcEntry(&od, action, to)
		}
		rep.cluster(liveCluster(obj)).Objects = append(rep.cluster(liveCluster(obj)).Objects, od)
	}
	rep.count()
	return rep, nil
}

// offlineDesired is obj as the API server would store it where that is
// certain: a Secret's stringData folded into data.
func offlineDesired(obj *unstructured.Unstructured) *unstructured.Unstructured {
	d := obj.DeepCopy()
	if !isSecret(d) {
		return d
	}
	sd, ok := d.Object["stringData"].(map[string]any)
	if !ok {
		return d
	}
	data, _ := d.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
	}
	d.Object["data"] = data
	delete(d.Object, "stringData")
	return d
}

// shapeOf is the field set (FieldsV1 form, see pruneTo) of every field v
// sets: lists of objects item by item (by "name" when every item has one,
// else by position), other lists whole.
func shapeOf(v any) map[string]any {
	set := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			set["f:"+k] = shapeOf(val)
		}
	case []any:
		named := len(x) > 0
		for _, item := range x {
			m, ok := item.(map[string]any)
			if !ok {
				return set
			}
			if _, ok := m["name"]; !ok {
				named = false
			}
		}
		for i, item := range x {
			key := fmt.Sprintf("i:%d", i)
			if named {
				b, err := json.Marshal(map[string]any{"name": item.(map[string]any)["name"]})
				if err != nil {
					return map[string]any{}
				}
				key = "k:" + string(b)
			}
			set[key] = shapeOf(item)
		}
	}
	return set
}
