package helmspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSpec(t *testing.T) {
	d := Defaults{Name: "web", Namespace: "team-a"}
	cases := []struct {
		reason  string
		raw     string
		wantErr []string // substrings of the error, field paths included
		check   func(t *testing.T, s *Spec)
	}{
		{
			reason: "defaults fill release name/namespace, latest means any version, valuesFrom key, criterion status",
			raw: `{"chart":{"source":"simple","repoURL":"https://charts.example.com","version":"latest"},
			       "valuesFrom":[{"kind":"ConfigMap","name":"vals"}],
			       "healthStatus":[{"resource":{"kind":"Deployment"},"condition":{"type":"Available"}}]}`,
			check: func(t *testing.T, s *Spec) {
				assert.Equal(t, ReleaseSpec{Name: "web", Namespace: "team-a"}, s.Release)
				assert.Equal(t, "", s.Chart.Version)
				assert.Equal(t, "values.yaml", s.ValuesFrom[0].Key)
				assert.Equal(t, "True", s.HealthStatus[0].Condition.Status)
				assert.True(t, s.Options.EffectiveCreateNamespace())
				assert.False(t, s.Options.EffectiveSkipCRDs())
				assert.Equal(t, 10, s.Options.EffectiveMaxHistory())
			},
		},
		{
			reason: "KubeVela's options are accepted, includeCRDs false means skip CRDs, null values are kept",
			raw: `{"chart":{"source":"oci://r.example.com/charts/app","version":">=1.0.0 <2"},
			       "release":{"name":"app","namespace":"other"},
			       "values":{"a":null,"b":{"c":1}},
			       "options":{"includeCRDs":false,"timeout":"90s","maxHistory":3,"atomic":true,"wait":true,"waitTimeout":"2m","cache":{"ttl":"5m"}}}`,
			check: func(t *testing.T, s *Spec) {
				assert.Equal(t, "other", s.Release.Namespace)
				assert.Contains(t, s.Values, "a")
				assert.Nil(t, s.Values["a"])
				assert.True(t, s.Options.EffectiveSkipCRDs())
				assert.Equal(t, 3, s.Options.EffectiveMaxHistory())
				assert.Equal(t, "2m0s", s.Options.EffectiveTimeout().String())
			},
		},
		{reason: "source is required", raw: `{"chart":{}}`, wantErr: []string{"spec.chart.source: Required value"}},
		{reason: "unknown fields are refused with their path", raw: `{"chart":{"source":"x"},"valus":{}}`, wantErr: []string{`spec.valus`}},
		{reason: "wrong types name the field", raw: `{"chart":{"source":"x"},"options":{"wait":"yes"}}`, wantErr: []string{"spec.options.wait", "expected bool"}},
		{reason: "credentials in URLs are refused and redacted", raw: `{"chart":{"source":"app","repoURL":"https://user:hunter2@charts.example.com"}}`,
			wantErr: []string{"spec.chart.repoURL", "credentials in URLs are refused", "xxxxx"}},
		{reason: "only http, https and oci URLs", raw: `{"chart":{"source":"ftp://x/y.tgz"}}`, wantErr: []string{"spec.chart.source", "Unsupported value"}},
		{reason: "bad version constraint", raw: `{"chart":{"source":"a","repoURL":"https://x","version":"one"}}`, wantErr: []string{"spec.chart.version"}},
		{reason: "cross-namespace auth Secret refused", raw: `{"chart":{"source":"a","repoURL":"https://x","auth":{"secretRef":{"name":"creds","namespace":"kube-system"}}}}`,
			wantErr: []string{"spec.chart.auth.secretRef.namespace: Forbidden", "cross-namespace"}},
		{reason: "cross-namespace valuesFrom refused; kind checked", raw: `{"chart":{"source":"a","repoURL":"https://x"},"valuesFrom":[{"kind":"Pod","name":"p","namespace":"kube-system"}]}`,
			wantErr: []string{"spec.valuesFrom[0].kind: Unsupported value", "spec.valuesFrom[0].namespace: Forbidden"}},
		{reason: "release name must be a DNS subdomain of at most 53 characters", raw: `{"chart":{"source":"a","repoURL":"https://x"},"release":{"name":"Bad_Name"}}`,
			wantErr: []string{"spec.release.name: Invalid value"}},
		{reason: "timeouts must be Go durations", raw: `{"chart":{"source":"a","repoURL":"https://x"},"options":{"timeout":"5 minutes"}}`,
			wantErr: []string{"spec.options.timeout: Invalid value"}},
		{reason: "criterion needs kind and type", raw: `{"chart":{"source":"a","repoURL":"https://x"},"healthStatus":[{"resource":{},"condition":{"type":"","status":"Maybe"}}]}`,
			wantErr: []string{"spec.healthStatus[0].resource.kind: Required", "spec.healthStatus[0].condition.type: Required", "spec.healthStatus[0].condition.status: Unsupported"}},
		{reason: "not an object", raw: `[1,2]`, wantErr: []string{"spec"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			s, err := ParseSpec([]byte(tc.raw), d)
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, err.Error(), "hunter2")
				return
			}
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}

func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(`{"chart":{"source":"simple","repoURL":"https://x"},"values":{"a":null}}`))
	f.Add([]byte(`{"chart":{"source":"oci://r/x","version":"~1"},"valuesFrom":[{"kind":"Secret","name":"s"}]}`))
	f.Add([]byte(`{"chart":{"source":"https://u:p@x/a.tgz"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseSpec(raw, Defaults{Name: "c", Namespace: "ns"})
		if err != nil {
			return
		}
		// A parsed spec is always valid and complete.
		require.NotEmpty(t, s.Chart.Source)
		require.NotEmpty(t, s.Release.Name)
		require.Empty(t, s.Validate(Defaults{Name: "c", Namespace: "ns"}))
	})
}
