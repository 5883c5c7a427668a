package common

// The conditions of an Application's status (status.conditions): one type
// per phase of a reconcile, each True when its phase succeeded; Ready sums
// them up. The reasons are CamelCase and stable: tools and alerts may match
// them. Reasons starting with "Invalid" (and RenderFailed, AccessDenied) are
// the user's to fix and end the run as workflowFailed; the other False
// reasons are retried.

// Condition types.
const (
	// ConditionParsed: the Application and the definitions it names were
	// read and validated (appfile.Validate). False: InvalidApplication (the
	// user's to fix) or ParseError (retried).
	ConditionParsed = "Parsed"
	// ConditionRevision: the ApplicationRevision of the current spec exists
	// (RevisionCreated or RevisionUnchanged).
	ConditionRevision = "Revision"
	// ConditionPolicy: the policies were evaluated (PoliciesReady).
	ConditionPolicy = "Policy"
	// ConditionRender: every component rendered with its properties.
	ConditionRender = "Render"
	// ConditionWorkflow: the state of the workflow run of the current
	// revision (WorkflowSucceeded, WorkflowRunning, WorkflowSuspended,
	// WorkflowFailed, WorkflowTerminated).
	ConditionWorkflow = "Workflow"
	// ConditionReady sums the others up: True when the workflow succeeded
	// and every component is healthy (Running); its message says what is
	// not ready otherwise.
	ConditionReady = "Ready"
	// ConditionIdentity says who the controller acts as for the
	// Application (package tenancy); False: nothing is deployed.
	ConditionIdentity = "Identity"
	// ConditionAdopted is set on an Application KubeVela deployed, once
	// oamflow takes it over (docs/migrate-from-kubevela.md): True
	// (AdoptedFromKubeVela) when what KubeVela applied is oamflow's, False
	// (AdoptionFailed, retried) saying what could not be taken over.
	ConditionAdopted = "Adopted"
)

// Condition reasons (CamelCase, stable). Reasons starting with "Invalid"
// are the user's to fix; the other False reasons are retried.
const (
	ReasonParsed             = "Parsed"
	ReasonInvalidApplication = "InvalidApplication"
	ReasonParseError         = "ParseError"

	ReasonRevisionCreated   = "RevisionCreated"
	ReasonRevisionUnchanged = "RevisionUnchanged"
	ReasonRevisionError     = "RevisionError"

	// Identity reasons: acting as a ServiceAccount or as the controller
	// (single-tenant mode); the annotation does not name a ServiceAccount,
	// or the ServiceAccount does not exist (both the user's to fix).
	ReasonServiceAccount         = "ServiceAccount"
	ReasonSingleTenant           = "SingleTenant"
	ReasonInvalidIdentity        = "InvalidIdentity"
	ReasonServiceAccountNotFound = "ServiceAccountNotFound"

	ReasonPoliciesReady = "PoliciesReady"
	ReasonInvalidPolicy = "InvalidPolicy"
	ReasonPolicyError   = "PolicyError"
	// ReasonResourceTrackerUnreadable: a ResourceTracker of the
	// Application cannot be read or decoded (e.g. a corrupt KubeVela
	// tracker); nothing is applied or collected until it is repaired or
	// deleted.
	ReasonResourceTrackerUnreadable = "ResourceTrackerUnreadable"

	// ReasonRenderFailed: a component's template failed with its
	// properties; like the Invalid reasons it is the user's (or the
	// definition author's) to fix and ends the run as workflowFailed.
	ReasonRendered     = "Rendered"
	ReasonRenderFailed = "RenderFailed"

	ReasonWorkflowSucceeded  = "WorkflowSucceeded"
	ReasonWorkflowRunning    = "WorkflowRunning"
	ReasonWorkflowSuspended  = "WorkflowSuspended"
	ReasonWorkflowFailed     = "WorkflowFailed"
	ReasonWorkflowTerminated = "WorkflowTerminated"
	ReasonInvalidWorkflow    = "InvalidWorkflow"
	ReasonWorkflowError      = "WorkflowError"

	ReasonAdoptedFromKubeVela = "AdoptedFromKubeVela"
	ReasonAdoptionFailed      = "AdoptionFailed"

	ReasonRunning              = "Running"
	ReasonUnhealthy            = "Unhealthy"
	ReasonGarbageCollectFailed = "GarbageCollectFailed"
	ReasonHealthCheckError     = "HealthCheckError"
	// ReasonClusterUnreachable: a target cluster could not be reached for
	// longer than the controller's --cluster-unreachable-after; the
	// components there are unhealthy (the Ready reason when they are the
	// only unhealthy ones, and status.services[].details.reason).
	ReasonClusterUnreachable = "ClusterUnreachable"
	ReasonDriftRepairFailed  = "DriftRepairFailed"
	ReasonNotReady           = "NotReady"
	ReasonReconcilePanic     = "ReconcilePanic"
	ReasonDeleting           = "Deleting"
)

// ReasonValidationWarning is the reason of the Warning events that report
// what validation warns about when a revision is made (a trait outside its
// appliesToWorkloads): the Application is deployed anyway.
const ReasonValidationWarning = "ValidationWarning"

// ReasonAccessDenied is the Warning Event reason of a write the
// Application's identity or scope does not allow.
const ReasonAccessDenied = "AccessDenied"

// ReasonNamespaceCreated is the reason of the Normal Event saying oamflow
// created a deploy target's missing namespace for the Application.
const ReasonNamespaceCreated = "NamespaceCreated"

// ReasonTrackerRebuilt is the reason of the Warning Event saying the
// current revision's ResourceTracker was missing (deleted by hand) and was
// rebuilt from the Application's live objects before garbage collection or
// the Application's deletion.
const ReasonTrackerRebuilt = "ResourceTrackerRebuilt"
