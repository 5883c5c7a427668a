package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestSameClientConfigs(t *testing.T) {
	url := Target{URL: "https://127.0.0.1:9443"}
	svc := Target{Service: &admissionregistrationv1.ServiceReference{Namespace: "oamflow-system", Name: "oamflow-webhook"}}
	conf := ConfigurationOptions{}
	ours := Configuration(conf, url, []byte("our CA"))
	cases := []struct {
		reason string
		got    *admissionregistrationv1.ValidatingWebhookConfiguration
		whole  bool
		want   bool
	}{
		{"our URL registration", Configuration(conf, url, []byte("our CA")), true, true},
		{"another controller's CA on our URL", Configuration(conf, url, []byte("their CA")), true, false},
		{"another port", Configuration(conf, Target{URL: "https://127.0.0.1:9444"}, []byte("our CA")), true, false},
		{"the chart's Service configuration in place of our URL", Configuration(conf, svc, []byte("our CA")), true, false},
		{"no webhooks left", &admissionregistrationv1.ValidatingWebhookConfiguration{}, true, false},
		{"the chart's configuration with another replica's (renewed) bundle is left alone", Configuration(conf, svc, []byte("renewed CA")), false, true},
		{"the chart's configuration applied again (empty bundle) is patched", Configuration(conf, svc, nil), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, sameClientConfigs(tc.got, ours, tc.whole))
		})
	}
}
