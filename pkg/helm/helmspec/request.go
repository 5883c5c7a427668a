package helmspec

import (
	"sort"
	"strings"
)

// Request is one release to act on.
type Request struct {
	// Cluster is the target cluster ("" or "local" is the hub).
	Cluster string
	// Namespace is the application's namespace: auth Secrets and valuesFrom
	// objects are read there (on the hub), and nowhere else.
	Namespace string
	// Spec is a parsed, defaulted Spec (see ParseSpec).
	Spec *Spec
	// Owner is the Application the release is for: it is recorded on the
	// release (LabelOwnerName, LabelOwnerNamespace) and a release another
	// Application owns is refused. Nil: no ownership (tools, tests).
	Owner *Owner
}

// Release labels naming the Application that owns a release (KubeVela's
// app.oam.dev/name and app.oam.dev/namespace).
const (
	LabelOwnerName      = "app.oam.dev/name"
	LabelOwnerNamespace = "app.oam.dev/namespace"
)

// Owner is the Application a release belongs to.
type Owner struct {
	Name, Namespace string
}

// IsZero reports whether o names no Application.
func (o Owner) IsZero() bool { return o.Name == "" && o.Namespace == "" }

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// OwnerOf returns the owner recorded in release labels.
func OwnerOf(labels map[string]string) Owner {
	return Owner{Name: labels[LabelOwnerName], Namespace: labels[LabelOwnerNamespace]}
}

// ReleaseInfo summarizes a stored release revision.
type ReleaseInfo struct {
	Name, Namespace string
	Revision        int
	Status          string
	Chart           string
	ChartVersion    string
	AppVersion      string
	// Digest is the LabelDigest of the revision ("" if not set by oamflow).
	Digest string
}

// Health reasons (CamelCase, stable) reported in Health.Reason.
const (
	ReasonReady              = "Ready"
	ReasonChartUnavailable   = "ChartUnavailable"
	ReasonValuesUnavailable  = "ValuesUnavailable"
	ReasonReleaseNotFound    = "ReleaseNotFound"
	ReasonReleaseNotDeployed = "ReleaseNotDeployed"
	ReasonOutOfSync          = "OutOfSync"
	ReasonResourcesNotReady  = "ResourcesNotReady"
	ReasonCriteriaNotMet     = "HealthCriteriaNotMet"
)

// ResourceState is the readiness of one manifest resource.
type ResourceState string

// Resource states.
const (
	StateReady    ResourceState = "Ready"
	StateNotReady ResourceState = "NotReady"
	StateMissing  ResourceState = "Missing"
)

// ResourceHealth is one resource of a release manifest as found live.
type ResourceHealth struct {
	APIVersion, Kind, Namespace, Name string
	State                             ResourceState
	// Message is kstatus's message for NotReady resources.
	Message string
}

// Health is the health of a release: healthy when it is deployed at the
// desired digest and every manifest resource is ready by kstatus (or, with
// healthStatus criteria, every criterion holds). A chart that cannot be
// fetched is never healthy.
type Health struct {
	Healthy bool
	// Reason is one of the Reason* constants.
	Reason string
	// Message is "release R revision N, chart C-V: N/M resources ready",
	// or what went wrong before resources could be counted.
	Message   string
	Release   ReleaseInfo
	Ready     int
	Total     int
	Resources []ResourceHealth
}

// Details groups the resources that are not ready, and those MISSING, by
// kind, for services[].details: key Kind, value e.g.
// "not ready: web (Available: 0/2 replicas); MISSING: db". Keys and names
// are sorted; ready kinds are absent.
func (h Health) Details() map[string]string {
	type group struct{ notReady, missing []string }
	groups := map[string]*group{}
	for _, r := range h.Resources {
		if r.State == StateReady {
			continue
		}
		g := groups[r.Kind]
		if g == nil {
			g = &group{}
			groups[r.Kind] = g
		}
		name := r.Name
		if r.Namespace != "" && r.Namespace != h.Release.Namespace {
			name = r.Namespace + "/" + r.Name
		}
		if r.State == StateMissing {
			g.missing = append(g.missing, name)
			continue
		}
		if r.Message != "" {
			name += " (" + r.Message + ")"
		}
		g.notReady = append(g.notReady, name)
	}
	if len(groups) == 0 {
		return nil
	}
	out := make(map[string]string, len(groups))
	for kind, g := range groups {
		sort.Strings(g.notReady)
		sort.Strings(g.missing)
		var parts []string
		if len(g.notReady) > 0 {
			parts = append(parts, "not ready: "+strings.Join(g.notReady, ", "))
		}
		if len(g.missing) > 0 {
			parts = append(parts, "MISSING: "+strings.Join(g.missing, ", "))
		}
		out[kind] = strings.Join(parts, "; ")
	}
	return out
}
