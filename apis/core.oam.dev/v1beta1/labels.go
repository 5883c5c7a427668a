package v1beta1

// Labels and annotations of the OAM model, as KubeVela uses them; users'
// selectors and scripts rely on these exact keys.
const (
	LabelAppName         = "app.oam.dev/name"
	LabelAppNamespace    = "app.oam.dev/namespace"
	LabelAppComponent    = "app.oam.dev/component"
	LabelAppRevision     = "app.oam.dev/appRevision"
	LabelResourceType    = "app.oam.dev/resourceType"
	LabelAppCluster      = "app.oam.dev/cluster"
	LabelWorkloadType    = "workload.oam.dev/type"
	LabelTraitType       = "trait.oam.dev/type"
	LabelTraitResource   = "trait.oam.dev/resource"
	LabelAppRevisionHash = "app.oam.dev/app-revision-hash"
	ResourceTypeWorkload = "WORKLOAD"
	ResourceTypeTrait    = "TRAIT"
	AnnoPublishVersion   = "app.oam.dev/publishVersion"
	AnnoAutoUpdate       = "app.oam.dev/autoUpdate"
	AnnoRestartWorkflow  = "app.oam.dev/restart-workflow"
	AnnoDefinitionDesc   = "definition.oam.dev/description"
	LabelClusterCredType = "cluster.core.oam.dev/cluster-credential-type"
	// AnnoServiceAccountName names the ServiceAccount (in the Application's
	// namespace) that the controller acts as for the Application.
	AnnoServiceAccountName = "app.oam.dev/service-account-name"
	// AnnoUsername and AnnoGroup record who last created or changed the
	// Application's spec (written by the admission webhook; KubeVela's
	// keys). oamflow records them; it never acts as that user.
	AnnoUsername = "app.oam.dev/username"
	AnnoGroup    = "app.oam.dev/group"
	ClusterLocal = "local"
)

// FinalizerOrphanResource on an Application (what `vela delete --orphan`
// and `oamflow delete --orphan` set) keeps the resources it deployed when
// they are collected, the Application's deletion included: they lose the
// Application's ownership labels instead of being deleted. The controller
// removes it together with its own finalizer.
const FinalizerOrphanResource = "app.oam.dev/orphan-resource"

// FinalizerResourceTracker is KubeVela's finalizer on the Applications it
// deployed. oamflow takes it as the mark of an Application KubeVela deployed
// and oamflow has not yet adopted (see docs/migrate-from-kubevela.md): it is
// removed once oamflow has taken over what KubeVela applied, or once the
// Application's resources are collected on deletion.
const FinalizerResourceTracker = "app.oam.dev/resource-tracker-finalizer"
