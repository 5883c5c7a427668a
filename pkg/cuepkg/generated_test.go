package cuepkg

import (
	"strings"
	"testing"

	pkgbase64 "github.com/kubevela/pkg/cue/cuex/providers/base64"
	pkgcue "github.com/kubevela/pkg/cue/cuex/providers/cue"
	pkghttp "github.com/kubevela/pkg/cue/cuex/providers/http"
	pkgkube "github.com/kubevela/pkg/cue/cuex/providers/kube"
	"github.com/kubevela/workflow/pkg/providers/builtin"
	"github.com/kubevela/workflow/pkg/providers/config"
	"github.com/kubevela/workflow/pkg/providers/email"
	"github.com/kubevela/workflow/pkg/providers/http"
	"github.com/kubevela/workflow/pkg/providers/kube"
	"github.com/kubevela/workflow/pkg/providers/legacy"
	"github.com/kubevela/workflow/pkg/providers/metrics"
	wftime "github.com/kubevela/workflow/pkg/providers/time"
	"github.com/kubevela/workflow/pkg/providers/util"
	"github.com/stretchr/testify/assert"
)

// TestGeneratedTemplatesMatchTheLibraries: zz_generated.templates.go holds
// the schemas the pinned libraries serve (run `make generate` after a
// dependency update when this fails).
func TestGeneratedTemplatesMatchTheLibraries(t *testing.T) {
	cases := []struct {
		reason          string
		generated, want string
	}{
		{"workflow legacy op", workflowLegacyOp, legacy.GetLegacyTemplate()},
		{"workflow kube", workflowKube, kube.GetTemplate()},
		{"workflow builtin", workflowBuiltin, builtin.GetTemplate()},
		{"workflow http", workflowHTTP, http.GetTemplate()},
		{"workflow util", workflowUtil, util.GetTemplate()},
		{"workflow time", workflowTime, wftime.GetTemplate()},
		{"workflow email", workflowEmail, email.GetTemplate()},
		{"workflow metrics", workflowMetrics, metrics.GetTemplate()},
		{"workflow config", workflowConfig, config.GetTemplate()},
		{"library kube", libraryKube, strings.Join(pkgkube.Package.GetTemplates(), "\n")},
		{"library http", libraryHTTP, strings.Join(pkghttp.Package.GetTemplates(), "\n")},
		{"library base64", libraryBase64, strings.Join(pkgbase64.Package.GetTemplates(), "\n")},
		{"library cue", libraryCUE, strings.Join(pkgcue.Package.GetTemplates(), "\n")},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.generated, "run make generate")
		})
	}
}
