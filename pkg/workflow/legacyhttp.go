package workflow

import (
	"context"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	"github.com/kubevela/workflow/pkg/providers/http"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
)

// legacyHTTPReturns is what op.#HTTPDo (and #HTTPGet, #HTTPPost, …) fill
// in: the response under `response`, as KubeVela's classic package
// documents (`resp.response.body`, `resp.response.statusCode`).
type legacyHTTPReturns struct {
	Response http.ResponseVars `json:"response"`
}

// legacyHTTPProvider is op.#HTTPDo's provider. kubevela/workflow v0.7.2's
// legacy one puts body and statusCode at the top of the action instead of
// under response, where every classic step reads them; this one makes the
// request with the library's vela/http provider (same parameters: method,
// url, request, tls_config) and returns it under response. (The action's
// placeholder `response` is left out of what the provider decodes; see
// withoutPlaceholders.)
func legacyHTTPProvider() cuexruntime.ProviderFn {
	return providertypes.LegacyGenericProviderFn[http.RequestVars, legacyHTTPReturns](
		func(ctx context.Context, p *providertypes.LegacyParams[http.RequestVars]) (*legacyHTTPReturns, error) {
			r, err := http.Do(ctx, &http.DoParams{Params: p.Params, RuntimeParams: p.RuntimeParams})
			if err != nil {
				return nil, err
			}
			return &legacyHTTPReturns{Response: r.Returns}, nil
		})
}
