package resourcekeeper

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/helm/helmspec"
)

// helmClientFns adapts functions to helmspec.Releases.
type helmClientFns struct {
	helmspec.Releases // methods the keeper must not call panic on the nil interface
	ensure            func(ctx context.Context, req helmspec.Request) (helmspec.Result, error)
}

func (f helmClientFns) Ensure(ctx context.Context, req helmspec.Request) (helmspec.Result, error) {
	return f.ensure(ctx, req)
}

func (f helmClientFns) UninstallOwned(context.Context, string, string, string, helmspec.Owner, helmspec.Options) (helmspec.Result, error) {
	return helmspec.Result{Action: helmspec.ActionUninstalled}, nil
}

func (f helmClientFns) Owner(context.Context, string, string, string) (helmspec.ReleaseOwner, error) {
	return helmspec.ReleaseOwner{}, nil
}

// TestHelmReleaseEvents: the Application gets a Warning when an install
// or upgrade fails and a Normal Event when a failed or stuck release was
// repaired; nothing when all is well or another operation holds the
// release.
func TestHelmReleaseEvents(t *testing.T) {
	owned := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": helmspec.APIVersion, "kind": helmspec.Kind,
			"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{
				v1beta1.LabelAppName: "store", v1beta1.LabelAppNamespace: "shop", v1beta1.LabelAppComponent: "web"}},
			"spec": map[string]any{"chart": map[string]any{"source": "simple"}},
		}}
	}
	recovery := "release shop/web revision 1 had failed: upgraded to revision 2"
	cases := []struct {
		reason  string
		obj     func() *unstructured.Unstructured
		cluster string
		res     helmspec.Result
		err     error
		want    []string
	}{
		{reason: "installed: no Event", obj: owned, res: helmspec.Result{Action: helmspec.ActionInstalled}},
		{reason: "unchanged: no Event", obj: owned, res: helmspec.Result{Action: helmspec.ActionUnchanged}},
		{reason: "a failed upgrade warns with the error", obj: owned, err: errors.New("upgrade release shop/web: Service \"web\" is invalid"),
			want: []string{`Warning HelmReleaseFailed helm release shop/web: upgrade release shop/web: Service "web" is invalid`}},
		{reason: "another operation in progress is no failure", obj: owned, res: helmspec.Result{Action: helmspec.ActionPending},
			err: fmt.Errorf("release shop/web is pending-upgrade: %w", helmspec.ErrOperationInProgress)},
		{reason: "a repaired failed release is a Normal Event", obj: owned, res: helmspec.Result{Action: helmspec.ActionUpgraded, Recovery: recovery},
			want: []string{"Normal HelmReleaseRecovered " + recovery}},
		{reason: "a repair followed by a failure gives both", obj: owned, res: helmspec.Result{Recovery: "release shop/web revision 3 was stuck"},
			err:  errors.New("boom"),
			want: []string{"Normal HelmReleaseRecovered release shop/web revision 3 was stuck", "Warning HelmReleaseFailed helm release shop/web: boom"}},
		{reason: "a member cluster is named", obj: owned, cluster: "member-1", err: errors.New("boom"),
			want: []string{"Warning HelmReleaseFailed helm release shop/web in cluster member-1: boom"}},
		{reason: "the hub is not named", obj: owned, cluster: "local", err: errors.New("boom"),
			want: []string{"Warning HelmReleaseFailed helm release shop/web: boom"}},
		{reason: "no owner labels: no Application to tell", obj: func() *unstructured.Unstructured {
			o := owned()
			o.SetLabels(nil)
			return o
		}, err: errors.New("boom")},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			h := NewHelmReleases(helmClientFns{ensure: func(context.Context, helmspec.Request) (helmspec.Result, error) { return tc.res, tc.err }},
				WithReleaseEvents(rec, nil))
			_, err := h.Ensure(context.Background(), tc.cluster, "shop", tc.obj())
			if tc.err != nil {
				require.Error(t, err)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
