package helmspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Spec is a Helm release as users write it: the properties of a `helm` (or
// `helmchart`) component, and the spec of a virtual HelmRelease object. The
// field names follow KubeVela's helmchart component so existing Application
// files work unchanged.
type Spec struct {
	// Chart says where the chart comes from.
	Chart ChartSpec `json:"chart"`
	// Release names the release; both fields default (see Defaults).
	Release ReleaseSpec `json:"release,omitempty"`
	// Values are inline values; they override everything in ValuesFrom. A
	// null value deletes the key from the chart's (and subcharts') defaults.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFrom are ConfigMaps/Secrets in the application's namespace,
	// merged in order (later wins) under Values.
	ValuesFrom []ValuesFrom `json:"valuesFrom,omitempty"`
	// HealthStatus, when not empty, replaces the kstatus readiness check:
	// the release is healthy when it is deployed and every criterion holds.
	HealthStatus []HealthCriterion `json:"healthStatus,omitempty"`
	// Options tune the Helm actions.
	Options Options `json:"options,omitempty"`
}

// ChartSpec locates a chart. Source is read as:
//   - "oci://host/repo/chart": an OCI reference (Version is the tag or a
//     semver constraint);
//   - "http(s)://…" (RepoURL empty): a direct URL of a packaged chart (.tgz);
//   - a chart name, with RepoURL set: a chart in a Helm repository (index.yaml)
//     or, when RepoURL is oci://, the OCI reference RepoURL/Source;
//   - otherwise a path of a chart bundled under the controller's chart root
//     (a directory or a .tgz), without ".." or absolute paths.
type ChartSpec struct {
	Source  string `json:"source"`
	RepoURL string `json:"repoURL,omitempty"`
	// Version is an exact version, a semver constraint (">=1.2 <2"), or
	// "latest"/"" for the highest released version.
	Version string     `json:"version,omitempty"`
	Auth    *ChartAuth `json:"auth,omitempty"`
}

// ChartAuth points at the Secret holding the credentials of the chart source.
type ChartAuth struct {
	SecretRef *SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret. Namespace must be empty or the application's
// namespace: cross-namespace references are refused.
type SecretRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// ReleaseSpec names the Helm release.
type ReleaseSpec struct {
	// Name defaults to the component name.
	Name string `json:"name,omitempty"`
	// Namespace defaults to the application's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// ValuesFrom reads values from a key of a ConfigMap or Secret.
type ValuesFrom struct {
	// Kind is "ConfigMap" or "Secret".
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace must be empty or the application's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Key defaults to "values.yaml"; its content is parsed as YAML.
	Key string `json:"key,omitempty"`
	// Optional skips a missing object or key instead of failing.
	Optional bool `json:"optional,omitempty"`
}

// HealthCriterion is one user-defined health rule: the first manifest
// resource of Resource.Kind (and Resource.Name when set) has the condition
// Condition.Type with status Condition.Status ("True" by default).
type HealthCriterion struct {
	Resource  CriterionResource  `json:"resource"`
	Condition CriterionCondition `json:"condition"`
}

// CriterionResource selects a resource of the release manifest.
type CriterionResource struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

// CriterionCondition is the condition a criterion expects.
type CriterionCondition struct {
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
}

// Options tune the Helm actions. Pointers distinguish "unset" from false/0
// where the default is not the zero value.
type Options struct {
	// CreateNamespace creates the release namespace on install (default true).
	CreateNamespace *bool `json:"createNamespace,omitempty"`
	// Timeout bounds each Helm operation, a Go duration (default "5m").
	Timeout string `json:"timeout,omitempty"`
	// WaitTimeout, when set, replaces Timeout for operations that wait.
	WaitTimeout string `json:"waitTimeout,omitempty"`
	// Atomic rolls back a failed upgrade (uninstalls a failed install).
	Atomic bool `json:"atomic,omitempty"`
	// Wait waits for the release's resources to be ready.
	Wait bool `json:"wait,omitempty"`
	// MaxHistory bounds the revisions kept per release (default 10; 0 = no limit).
	MaxHistory *int `json:"maxHistory,omitempty"`
	// SkipCRDs does not install the chart's crds/ folder. IncludeCRDs (default
	// true) is KubeVela's spelling of the opposite; SkipCRDs wins when both are set.
	SkipCRDs    bool  `json:"skipCRDs,omitempty"`
	IncludeCRDs *bool `json:"includeCRDs,omitempty"`
	// SkipHooks disables chart hooks.
	SkipHooks bool `json:"skipHooks,omitempty"`
	// SkipTests drops test hooks from Template output (default true).
	SkipTests *bool `json:"skipTests,omitempty"`
	// Force, RecreatePods and CleanupOnFail map to the Helm upgrade flags.
	Force         bool `json:"force,omitempty"`
	RecreatePods  bool `json:"recreatePods,omitempty"`
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`
	// Cache is accepted for compatibility with KubeVela and ignored: oamflow
	// caches charts by content digest.
	Cache map[string]any `json:"cache,omitempty"`
}

// Defaults fill the fields a Spec may leave empty.
type Defaults struct {
	// Name is the component name: the default release name.
	Name string
	// Namespace is the application's namespace: the default release
	// namespace and the only namespace Secrets/ConfigMaps are read from.
	Namespace string
}

const (
	defaultTimeout    = 5 * time.Minute
	defaultMaxHistory = 10
	defaultValuesKey  = "values.yaml"
)

// ParseSpec decodes raw (the JSON of the component properties) strictly,
// fills defaults and validates the result. Errors name the field path, e.g.
// `spec.chart.source: Required value: …`; unknown fields are errors.
func ParseSpec(raw []byte, d Defaults) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, decodeError(err)
	}
	if dec.More() {
		return nil, field.Invalid(field.NewPath("spec"), "<trailing data>", "expected one JSON object")
	}
	s.Default(d)
	if errs := s.Validate(d); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &s, nil
}

// ParseSpecMap is ParseSpec for already-decoded properties.
func ParseSpecMap(props map[string]any, d Defaults) (*Spec, error) {
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("encode helm properties: %w", err)
	}
	return ParseSpec(raw, d)
}

func decodeError(err error) error {
	root := field.NewPath("spec")
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		p := root
		if te.Field != "" {
			for _, part := range strings.Split(te.Field, ".") {
				p = p.Child(part)
			}
		}
		return field.Invalid(p, te.Value, "expected "+te.Type.String())
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		name := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return field.NotSupported[string](root.Child(name), name, nil)
	}
	return field.Invalid(root, "", "expected a JSON object: "+msg)
}

// Default fills release name/namespace and option defaults in place.
func (s *Spec) Default(d Defaults) {
	if s.Release.Name == "" {
		s.Release.Name = d.Name
	}
	if s.Release.Namespace == "" {
		s.Release.Namespace = d.Namespace
	}
	if s.Chart.Version == "latest" {
		s.Chart.Version = ""
	}
	for i := range s.ValuesFrom {
		if s.ValuesFrom[i].Key == "" {
			s.ValuesFrom[i].Key = defaultValuesKey
		}
	}
	for i := range s.HealthStatus {
		if s.HealthStatus[i].Condition.Status == "" {
			s.HealthStatus[i].Condition.Status = "True"
		}
	}
}

// Validate checks a defaulted Spec. appNamespace refuses cross-namespace
// Secret/ConfigMap references.
func (s *Spec) Validate(d Defaults) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("spec")
	errs = append(errs, s.Chart.validate(root.Child("chart"), d.Namespace)...)

	rel := root.Child("release")
	if s.Release.Name == "" {
		errs = append(errs, field.Required(rel.Child("name"), "a release name (defaults to the component name)"))
	} else if len(s.Release.Name) > 53 {
		errs = append(errs, field.TooLong(rel.Child("name"), s.Release.Name, 53))
	} else if msgs := validation.IsDNS1123Subdomain(s.Release.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(rel.Child("name"), s.Release.Name, strings.Join(msgs, "; ")))
	}
	if s.Release.Namespace == "" {
		errs = append(errs, field.Required(rel.Child("namespace"), "a namespace (defaults to the application's namespace)"))
	} else if msgs := validation.IsDNS1123Label(s.Release.Namespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(rel.Child("namespace"), s.Release.Namespace, strings.Join(msgs, "; ")))
	}

	for i, vf := range s.ValuesFrom {
		p := root.Child("valuesFrom").Index(i)
		if vf.Kind != "ConfigMap" && vf.Kind != "Secret" {
			errs = append(errs, field.NotSupported(p.Child("kind"), vf.Kind, []string{"ConfigMap", "Secret"}))
		}
		if vf.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the name of the "+vf.Kind))
		}
		if vf.Namespace != "" && vf.Namespace != d.Namespace {
			errs = append(errs, field.Forbidden(p.Child("namespace"),
				fmt.Sprintf("cross-namespace reference to %q refused: only the application's namespace %q may be read", vf.Namespace, d.Namespace)))
		}
	}
	for i, c := range s.HealthStatus {
		p := root.Child("healthStatus").Index(i)
		if c.Resource.Kind == "" {
			errs = append(errs, field.Required(p.Child("resource", "kind"), "the kind of a resource of the release"))
		}
		if c.Condition.Type == "" {
			errs = append(errs, field.Required(p.Child("condition", "type"), "a status condition type such as Available"))
		}
		if c.Condition.Status != "True" && c.Condition.Status != "False" {
			errs = append(errs, field.NotSupported(p.Child("condition", "status"), c.Condition.Status, []string{"True", "False"}))
		}
	}
	opt := root.Child("options")
	for name, v := range map[string]string{"timeout": s.Options.Timeout, "waitTimeout": s.Options.WaitTimeout} {
		if v == "" {
			continue
		}
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			errs = append(errs, field.Invalid(opt.Child(name), v, "expected a positive Go duration such as 5m or 90s"))
		}
	}
	if s.Options.MaxHistory != nil && *s.Options.MaxHistory < 0 {
		errs = append(errs, field.Invalid(opt.Child("maxHistory"), *s.Options.MaxHistory, "expected 0 (no limit) or more"))
	}
	return errs
}

func (c ChartSpec) validate(p *field.Path, appNamespace string) field.ErrorList {
	var errs field.ErrorList
	if c.Source == "" {
		errs = append(errs, field.Required(p.Child("source"), "a chart name, an oci:// reference, an http(s) URL of a .tgz, or a bundled chart path"))
	}
	for name, v := range map[string]string{"source": c.Source, "repoURL": c.RepoURL} {
		if v == "" || !strings.Contains(v, "://") {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child(name), "<unparseable URL>", "expected a URL"))
			continue
		}
		if u.User != nil {
			errs = append(errs, field.Invalid(p.Child(name), u.Redacted(), "credentials in URLs are refused: put them in a Secret and set chart.auth.secretRef"))
		}
		switch u.Scheme {
		case "http", "https", "oci":
		default:
			errs = append(errs, field.NotSupported(p.Child(name), u.Scheme+"://", []string{"http://", "https://", "oci://"}))
		}
	}
	if c.Version != "" {
		if _, err := semver.NewConstraint(c.Version); err != nil {
			errs = append(errs, field.Invalid(p.Child("version"), c.Version, "expected a version, a semver constraint, or \"latest\""))
		}
	}
	if c.Auth != nil && c.Auth.SecretRef != nil {
		ref := c.Auth.SecretRef
		sp := p.Child("auth", "secretRef")
		if ref.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), "the name of a Secret in the application's namespace"))
		}
		if ref.Namespace != "" && ref.Namespace != appNamespace {
			errs = append(errs, field.Forbidden(sp.Child("namespace"),
				fmt.Sprintf("cross-namespace reference to %q refused: only the application's namespace %q may be read", ref.Namespace, appNamespace)))
		}
	}
	return errs
}

// EffectiveTimeout returns the operation timeout: WaitTimeout when waiting and set,
// else Timeout, else 5m.
func (o Options) EffectiveTimeout() time.Duration {
	if o.Wait && o.WaitTimeout != "" {
		if d, err := time.ParseDuration(o.WaitTimeout); err == nil {
			return d
		}
	}
	if d, err := time.ParseDuration(o.Timeout); err == nil && d > 0 {
		return d
	}
	return defaultTimeout
}

// EffectiveCreateNamespace reports whether the release namespace is
// created when missing (default true).
func (o Options) EffectiveCreateNamespace() bool {
	return o.CreateNamespace == nil || *o.CreateNamespace
}

// EffectiveSkipCRDs reports whether the chart's crds/ folder is skipped
// (skipCRDs, or includeCRDs set to false).
func (o Options) EffectiveSkipCRDs() bool {
	return o.SkipCRDs || (o.IncludeCRDs != nil && !*o.IncludeCRDs)
}

// EffectiveSkipTests reports whether test hooks are left out of templates
// (default true).
func (o Options) EffectiveSkipTests() bool { return o.SkipTests == nil || *o.SkipTests }

// EffectiveMaxHistory returns the number of revisions kept (default
// defaultMaxHistory).
func (o Options) EffectiveMaxHistory() int {
	if o.MaxHistory == nil {
		return defaultMaxHistory
	}
	return *o.MaxHistory
}
