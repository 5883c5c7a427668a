package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// fixtureRevision is revision n of Application app in default.
func fixtureRevision(app string, n int, hash string, succeeded bool, created metav1.Time, publishVersion string) *v1beta1.ApplicationRevision {
	rev := &v1beta1.ApplicationRevision{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-v" + strconv.Itoa(n), Namespace: "default", CreationTimestamp: created,
			Labels: map[string]string{v1beta1.LabelAppName: app, v1beta1.LabelAppRevisionHash: hash}},
		Spec: v1beta1.ApplicationRevisionSpec{Application: v1beta1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
			Spec:       v1beta1.ApplicationSpec{Components: []common.ApplicationComponent{{Name: "web", Type: "webservice"}}},
		}},
		Status: v1beta1.ApplicationRevisionStatus{Succeeded: succeeded},
	}
	if publishVersion != "" {
		rev.Spec.Application.Annotations = map[string]string{v1beta1.AnnoPublishVersion: publishVersion}
	}
	return rev
}

func TestFormatRevisionRowsGolden(t *testing.T) {
	revs := []v1beta1.ApplicationRevision{
		*fixtureRevision("demo", 1, "0a1b2c3d", true, ago(26*time.Hour), ""),
		*fixtureRevision("demo", 2, "4e5f6a7b", false, ago(90*time.Minute), "v2"),
		*fixtureRevision("demo", 3, "", false, metav1.Time{}, ""),
	}
	var b bytes.Buffer
	require.NoError(t, formatRevisionRows(&b, revisionRows(revs), goldenNow))
	assertGolden(t, "revision/list.golden", b.String())
}

func TestRevisionName(t *testing.T) {
	cases := []struct {
		reason  string
		arg     string
		want    string
		wantErr bool
	}{
		{reason: "a number", arg: "3", want: "demo-v3"},
		{reason: "vN", arg: "v3", want: "demo-v3"},
		{reason: "the full name", arg: "demo-v12", want: "demo-v12"},
		{reason: "zero is no revision", arg: "0", wantErr: true},
		{reason: "another app's revision", arg: "shop-v1", wantErr: true},
		{reason: "not a number", arg: "latest", wantErr: true},
	}
	for _, tc := range cases {
		got, err := revisionName("demo", tc.arg)
		if tc.wantErr {
			var ue *UserError
			assert.ErrorAs(t, err, &ue, tc.reason)
			continue
		}
		require.NoError(t, err, tc.reason)
		assert.Equal(t, tc.want, got, tc.reason)
	}
}

func testRevision(t *testing.T, e *cliEnv) {
	ctx := context.Background()
	// web exists (from the up tests); give it three revisions, created out of order.
	for _, n := range []int{2, 1, 3} {
		rev := fixtureRevision("web", n, "hash"+strconv.Itoa(n), n < 3, metav1.Time{}, "")
		st := rev.Status
		require.NoError(t, e.c.Create(ctx, rev))
		rev.Status = st
		require.NoError(t, e.c.Status().Update(ctx, rev))
	}
	// A revision of another Application is not listed.
	require.NoError(t, e.c.Create(ctx, fixtureRevision("other", 1, "x", true, metav1.Time{}, "")))

	r := e.run("", "revision", "list", "web")
	require.Equal(t, ExitOK, r.code, r.err)
	assert.Regexp(t, `(?s)REVISION\s+HASH\s+SUCCEEDED\s+PUBLISH-VERSION\s+AGE\nweb-v1\s+hash1\s+true\s+-\s+\S+\nweb-v2\s+hash2\s+true\s+-\s+\S+\nweb-v3\s+hash3\s+false\s+-\s+\S+\n$`, r.out)

	r = e.run("", "revision", "list", "web", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.err)
	var rows []revisionRow
	require.NoError(t, json.Unmarshal([]byte(r.out), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, int64(3), rows[2].Revision)

	cases := []struct {
		reason string
		args   []string
		want   string
	}{
		{reason: "the newest by default", args: []string{"revision", "get", "web"}, want: "web-v3"},
		{reason: "by number", args: []string{"revision", "get", "web", "1"}, want: "web-v1"},
		{reason: "by name, as JSON", args: []string{"revision", "get", "web", "web-v2", "-o", "json"}, want: "web-v2"},
	}
	for _, tc := range cases {
		r := e.run("", tc.args...)
		require.Equal(t, ExitOK, r.code, "%s: %v", tc.reason, r.err)
		rev := &v1beta1.ApplicationRevision{}
		require.NoError(t, yaml.Unmarshal([]byte(r.out), rev), tc.reason)
		assert.Equal(t, tc.want, rev.Name, tc.reason)
		assert.Equal(t, "ApplicationRevision", rev.Kind, tc.reason)
		assert.Equal(t, "webservice", rev.Spec.Application.Spec.Components[0].Type, "%s: the snapshot is printed", tc.reason)
		assert.Empty(t, rev.ManagedFields, tc.reason)
	}

	errs := []struct {
		reason string
		args   []string
		want   string
	}{
		{reason: "a revision that does not exist lists those that do", args: []string{"revision", "get", "web", "9"}, want: "no revision web-v9 (it has web-v1, web-v2, web-v3)"},
		{reason: "an Application that does not exist", args: []string{"revision", "list", "ghost"}, want: "default/ghost not found"},
		{reason: "an Application without revisions", args: []string{"revision", "get", "del-never", "-n", "other"}, want: "not found"},
		{reason: "a bad revision argument", args: []string{"revision", "get", "web", "newest"}, want: "expected N, vN or web-vN"},
		{reason: "too many arguments", args: []string{"revision", "get", "web", "1", "2"}, want: "optionally a revision"},
		{reason: "table output is for list only", args: []string{"revision", "get", "web", "-o", "table"}, want: "--output"},
	}
	for _, tc := range errs {
		r := e.run("", tc.args...)
		assert.Equal(t, ExitUserError, r.code, "%s: %v", tc.reason, r.err)
		if assert.Error(t, r.err, tc.reason) {
			assert.Contains(t, r.err.Error(), tc.want, tc.reason)
		}
	}
}
