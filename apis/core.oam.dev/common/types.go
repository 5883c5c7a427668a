// Package common holds the OAM types shared by several kinds of the
// core.oam.dev API group: components, traits, schematics, health policies and
// the status of an Application. Field names and JSON tags follow the OAM
// Application model as implemented by KubeVela, so that existing
// Application and definition YAML applies unchanged.
// +kubebuilder:object:generate=true
package common

import (
	oamv1alpha1 "github.com/kubevela/pkg/apis/oam/v1alpha1"
	wfv1alpha1 "github.com/kubevela/workflow/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ApplicationComponent is one entry of Application.spec.components.
type ApplicationComponent struct {
	// Name is unique within the Application; it names the rendered workload
	// unless the definition says otherwise.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Type is the ComponentDefinition name; "name@vN" pins DefinitionRevision N.
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// ExternalRevision names the revision of the rendered workload.
	ExternalRevision string `json:"externalRevision,omitempty"`
	// Properties is a free-form object unified with the definition's CUE `parameter`.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Properties *runtime.RawExtension `json:"properties,omitempty"`
	// DependsOn lists components that must be deployed (and healthy) first.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Inputs fill parameter keys from outputs of other components or steps.
	Inputs oamv1alpha1.StepInputs `json:"inputs,omitempty"`
	// Outputs export values of the rendered component to later components or steps.
	Outputs oamv1alpha1.StepOutputs `json:"outputs,omitempty"`
	// Traits are applied in order; later traits patch over earlier ones.
	Traits []ApplicationTrait `json:"traits,omitempty"`
}

// ApplicationTrait is one entry of a component's traits.
type ApplicationTrait struct {
	// Type is the TraitDefinition name.
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// Properties is unified with the trait definition's CUE `parameter`.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Properties *runtime.RawExtension `json:"properties,omitempty"`
}

// AppPolicy is one entry of Application.spec.policies.
type AppPolicy struct {
	// Name is unique within the Application.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Type is the PolicyDefinition name (topology, override, garbage-collect, …).
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// Properties is unified with the policy definition's CUE `parameter`.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Properties *runtime.RawExtension `json:"properties,omitempty"`
}

// Workflow is Application.spec.workflow. With no steps the controller runs its
// default workflow (one apply-component step per component, or a deploy step
// when topology/override policies are present).
type Workflow struct {
	// Ref names a standalone Workflow object to run instead of Steps.
	Ref string `json:"ref,omitempty"`
	// Mode sets how steps and sub-steps run: StepByStep (default for steps) or DAG (default for sub-steps).
	Mode *oamv1alpha1.WorkflowExecuteMode `json:"mode,omitempty"`
	// Steps are the workflow steps.
	Steps []oamv1alpha1.WorkflowStep `json:"steps,omitempty"`
}

// CUE holds a CUE template.
type CUE struct {
	// Template is CUE source defining `parameter` and `output`/`outputs`
	// (components), `patch`/`outputs` (traits), or a step's actions.
	Template string `json:"template"`
}

// Schematic says how a definition is implemented; only CUE is supported.
type Schematic struct {
	CUE *CUE `json:"cue,omitempty"`
}

// Status of a definition: CUE expressions evaluated against live objects.
type Status struct {
	// HealthPolicy is CUE that yields bool `isHealth`; empty means healthy.
	HealthPolicy string `json:"healthPolicy,omitempty"`
	// CustomStatus is CUE that yields string `message`.
	CustomStatus string `json:"customStatus,omitempty"`
	// Details is CUE whose fields become services[].details.
	Details string `json:"details,omitempty"`
}

// WorkloadGVK names a workload kind.
type WorkloadGVK struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// WorkloadTypeDescriptor names the workload a ComponentDefinition renders,
// either by type (a resource name such as "deployments.apps", or
// "autodetects.core.oam.dev") or by apiVersion/kind.
type WorkloadTypeDescriptor struct {
	Type       string       `json:"type,omitempty"`
	Definition *WorkloadGVK `json:"definition,omitempty"`
}

// ApplicationPhase is Application.status.status.
type ApplicationPhase string

// Application phases, as KubeVela reports them.
const (
	ApplicationStarting           ApplicationPhase = "starting"
	ApplicationRendering          ApplicationPhase = "rendering"
	ApplicationPolicyGenerating   ApplicationPhase = "generatingPolicy"
	ApplicationRunningWorkflow    ApplicationPhase = "runningWorkflow"
	ApplicationWorkflowSuspending ApplicationPhase = "workflowSuspending"
	ApplicationWorkflowTerminated ApplicationPhase = "workflowTerminated"
	ApplicationWorkflowFailed     ApplicationPhase = "workflowFailed"
	ApplicationRunning            ApplicationPhase = "running"
	ApplicationUnhealthy          ApplicationPhase = "unhealthy"
	ApplicationDeleting           ApplicationPhase = "deleting"
)

// ApplicationTraitStatus is the health of one trait of a component.
type ApplicationTraitStatus struct {
	Type    string `json:"type"`
	Healthy bool   `json:"healthy"`
	Message string `json:"message,omitempty"`
	// Details are the fields of the trait definition's status.details.
	Details map[string]string `json:"details,omitempty"`
}

// ApplicationComponentStatus is one entry of status.services: the health of
// one component in one cluster and namespace.
type ApplicationComponentStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Cluster is the target cluster; empty or "local" is the hub.
	Cluster string `json:"cluster,omitempty"`
	// WorkloadDefinition is the kind of the main workload.
	WorkloadDefinition WorkloadGVK `json:"workloadDefinition,omitempty"`
	Healthy            bool        `json:"healthy"`
	// Message is the definition's customStatus message, or why it is unhealthy.
	Message string `json:"message,omitempty"`
	// Details are the fields of the definition's status.details.
	Details map[string]string        `json:"details,omitempty"`
	Traits  []ApplicationTraitStatus `json:"traits,omitempty"`
}

// ClusterObjectReference names an object in a cluster.
type ClusterObjectReference struct {
	// Cluster is empty or "local" for the hub.
	Cluster    string `json:"cluster,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
}

// Revision identifies an ApplicationRevision.
type Revision struct {
	// Name is "<app>-v<N>".
	Name string `json:"name"`
	// Revision is N.
	Revision int64 `json:"revision"`
	// RevisionHash is the content hash the revision deduplicates on.
	RevisionHash string `json:"revisionHash,omitempty"`
}

// WorkflowStatus is status.workflow: the state of the current workflow run.
type WorkflowStatus struct {
	// AppRevision is the revision this run deploys.
	AppRevision string                      `json:"appRevision,omitempty"`
	Mode        string                      `json:"mode,omitempty"`
	Status      wfv1alpha1.WorkflowRunPhase `json:"status,omitempty"`
	Message     string                      `json:"message,omitempty"`
	Suspend     bool                        `json:"suspend"`
	// SuspendState says why the run is suspended.
	SuspendState string                          `json:"suspendState,omitempty"`
	Terminated   bool                            `json:"terminated"`
	Finished     bool                            `json:"finished"`
	Steps        []wfv1alpha1.WorkflowStepStatus `json:"steps,omitempty"`
	StartTime    metav1.Time                     `json:"startTime,omitempty"`
	EndTime      metav1.Time                     `json:"endTime,omitempty"`
}

// PolicyStatus holds state a policy keeps between reconciles (for example
// the clusters a topology selected).
type PolicyStatus struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Status is policy-specific.
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`
}

// AppStatus is the status of an Application.
type AppStatus struct {
	// ObservedGeneration is the metadata.generation this status describes
	// (Kubernetes API conventions).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Parsed, Revision, Policy, Render, Workflow, Ready.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Phase of the Application.
	Phase ApplicationPhase `json:"status,omitempty"`
	// Services is the health of each component per cluster.
	Services []ApplicationComponentStatus `json:"services,omitempty"`
	// Workflow is the current workflow run.
	Workflow *WorkflowStatus `json:"workflow,omitempty"`
	// LatestRevision is the newest ApplicationRevision.
	LatestRevision *Revision `json:"latestRevision,omitempty"`
	// AppliedResources lists every object the current revision applied.
	AppliedResources []ClusterObjectReference `json:"appliedResources,omitempty"`
	// PolicyStatus is per-policy state.
	PolicyStatus []PolicyStatus `json:"policy,omitempty"`
	// Placement is where the current workflow run deploys: each target
	// cluster and namespace, with the policy or step that put it there
	// and why. An oamflow field (KubeVela has none): it follows the fleet
	// when a label selector's matches change.
	Placement []PlacementStatus `json:"placement,omitempty"`
}

// PlacementStatus is one entry of status.placement: a cluster and
// namespace the Application deploys to, and why it is in the set.
type PlacementStatus struct {
	// Cluster is the target cluster ("local" is the hub).
	Cluster string `json:"cluster"`
	// Namespace is the target namespace (the Application's unless a
	// topology policy or an apply-component step says otherwise).
	Namespace string `json:"namespace,omitempty"`
	// Policy is the topology policy that placed it (empty without one).
	Policy string `json:"policy,omitempty"`
	// Reason says why the target is in the set: "labels match policy
	// spread {region=us}", "named in policy prod clusters", "no topology
	// policy: the hub", ….
	Reason string `json:"reason,omitempty"`
	// UnreachableSince is when the health check first failed to reach
	// the cluster, unset while it is reachable. Once it is older than the
	// controller's --cluster-unreachable-after, the components there are
	// unhealthy (reason ClusterUnreachable); nothing is deleted there
	// meanwhile.
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`
}
