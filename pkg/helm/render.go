package helm

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"text/template"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// renderErrorPrefixes are how Helm v3.16's install and upgrade actions
// word a failure to render the chart. Helm returns these errors as they
// are (no type, not wrapped), so the start of the action's error message
// is matched, nothing deeper:
//   - pkg/engine (cleanupParseError, cleanupExecError): a template that
//     does not parse, and a template function error such as `required`
//     or `fail`, whose type Helm drops when it rewords it;
//   - pkg/chartutil (ToRenderValuesWithSchemaValidation): values that
//     break the chart's values.schema.json.
//
// Other template execution errors keep text/template's ExecError type and
// are recognised by it (renderFailure). A chart whose kubeVersion does
// not allow the cluster's version is left out on purpose: that depends on
// the cluster, not on the spec.
var renderErrorPrefixes = []string{
	"parse error at (",
	"parse error in (",
	"execution error at (",
	"execution error in (",
	"values don't meet the specifications of the schema(s)",
}

// renderFailure reports whether err, as returned by Helm's install or
// upgrade action, is a render failure: text/template's ExecError (a nil
// pointer, a bad function argument, `tpl` of a broken string) or a
// message starting with one of renderErrorPrefixes. A template that
// failed because a `lookup` could not reach the API server (an API status
// or network error in the chain) is not: it may render next time.
func renderFailure(err error) bool {
	if err == nil || fromCluster(err) {
		return false
	}
	var ee template.ExecError
	if errors.As(err, &ee) {
		return true
	}
	msg := err.Error()
	for _, p := range renderErrorPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// fromCluster reports whether err carries an answer (or the lack of one)
// from an API server.
func fromCluster(err error) bool {
	var status apierrors.APIStatus
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &status) || errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
