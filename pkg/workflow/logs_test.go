package workflow

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLibraryLoggerRedacts(t *testing.T) {
	const secret = "hunter2-7f3a"
	callErr := errors.New(`function call error for apply: applying Secret ns/db: not found (value: #do: "apply"
$params: value: stringData: password: "` + secret + `"
)`)
	cases := []struct {
		reason string
		log    func(l logr.Logger)
		want   string
	}{
		{reason: "a provider call's error", log: func(l logr.Logger) { l.Error(callErr, "do steps", "step_name", "put", "step_type", "apply-object") },
			want: `"error"="applying Secret ns/db: not found"`},
		{reason: "the error as a string value", log: func(l logr.Logger) { l.Info("failed", "reason", callErr.Error()) }, want: `"reason"="applying Secret ns/db: not found"`},
		{reason: "a Secret object", log: func(l logr.Logger) {
			l.Info("applying", "object", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte(secret)}, StringData: map[string]string{"token": secret}})
		}, want: `db`},
		{reason: "an unstructured Secret", log: func(l logr.Logger) {
			l.WithValues("object", &unstructured.Unstructured{Object: map[string]any{"kind": "Secret", "data": map[string]any{"password": secret}}}).Info("applying")
		}, want: `<redacted>`},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var out strings.Builder
			l := LibraryLogger(funcr.New(func(prefix, args string) { out.WriteString(prefix + args + "\n") }, funcr.Options{}))
			tc.log(l)
			assert.Contains(t, out.String(), tc.want)
			assert.NotContains(t, out.String(), secret)
		})
	}
}
