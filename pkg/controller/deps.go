package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
	"github.com/oamflow/oamflow/pkg/appfile"
	"github.com/oamflow/oamflow/pkg/render"
	"github.com/oamflow/oamflow/pkg/resourcekeeper"
	"github.com/oamflow/oamflow/pkg/workflow"
)

// Validator decides whether an Application can be deployed
// (appfile.Validate): the parsed Application and its warnings, or an
// *appfile.InvalidError.
type Validator interface {
	Validate(ctx context.Context, app *v1beta1.Application, src appfile.DefinitionSource, clusters appfile.Clusters) (*appfile.AppFile, []string, error)
}

// ValidatorFn adapts a function to Validator.
type ValidatorFn func(ctx context.Context, app *v1beta1.Application, src appfile.DefinitionSource, clusters appfile.Clusters) (*appfile.AppFile, []string, error)

// Validate calls fn.
func (fn ValidatorFn) Validate(ctx context.Context, app *v1beta1.Application, src appfile.DefinitionSource, clusters appfile.Clusters) (*appfile.AppFile, []string, error) {
	return fn(ctx, app, src, clusters)
}

// SourceFactory returns the source of the definitions currently installed,
// as seen from app's namespace.
type SourceFactory interface {
	Source(app *v1beta1.Application) appfile.DefinitionSource
}

// SourceFactoryFn adapts a function to SourceFactory.
type SourceFactoryFn func(app *v1beta1.Application) appfile.DefinitionSource

// Source calls fn.
func (fn SourceFactoryFn) Source(app *v1beta1.Application) appfile.DefinitionSource { return fn(app) }

// Renderer renders one component of a parsed Application.
type Renderer interface {
	RenderComponent(ctx context.Context, af *appfile.AppFile, component string, opts render.Options) ([]render.Resource, error)
}

// RendererFn adapts a function to Renderer.
type RendererFn func(ctx context.Context, af *appfile.AppFile, component string, opts render.Options) ([]render.Resource, error)

// RenderComponent calls fn.
func (fn RendererFn) RenderComponent(ctx context.Context, af *appfile.AppFile, component string, opts render.Options) ([]render.Resource, error) {
	return fn(ctx, af, component, opts)
}

// Keeper applies and tracks the objects of one Application revision (see
// package resourcekeeper).
type Keeper interface {
	Apply(ctx context.Context, cluster string, objs []*unstructured.Unstructured) error
	// Expect says what later Apply calls of this run will apply, so that
	// the first one records it in the same tracker write.
	Expect(cluster string, objs []*unstructured.Unstructured)
	// EnsureNamespaces creates the missing namespaces objs go to in
	// cluster (when create) and returns those it created.
	EnsureNamespaces(ctx context.Context, cluster string, objs []*unstructured.Unstructured, create bool) ([]string, error)
	GarbageCollect(ctx context.Context) (done bool, err error)
	// HasGarbage reports whether trackers of older revisions remain.
	HasGarbage(ctx context.Context) (bool, error)
	Delete(ctx context.Context) (done bool, err error)
	// LeftOnGoneClusters names what Delete left on clusters that are no
	// longer registered.
	LeftOnGoneClusters() []string
	// RebuiltTracker says which lost ResourceTracker GarbageCollect or
	// Delete rebuilt from the live objects ("" when none).
	RebuiltTracker() string
	StateKeep(ctx context.Context) error
	// AppliedResources lists what the current revision's tracker lists;
	// nil when there is no such tracker.
	AppliedResources(ctx context.Context) ([]common.ClusterObjectReference, error)
	CheckTrackers(ctx context.Context) error
	// Reader wraps r (reading cluster) to answer a read of an object
	// this Keeper read or wrote with what the API server answered then.
	Reader(cluster string, r client.Reader) client.Reader
}

// KeeperFactory builds the Keeper of revision N of app.
type KeeperFactory interface {
	Keeper(app *v1beta1.Application, revision int64, policies resourcekeeper.Policies) (Keeper, error)
}

// KeeperFactoryFn adapts a function to KeeperFactory.
type KeeperFactoryFn func(app *v1beta1.Application, revision int64, policies resourcekeeper.Policies) (Keeper, error)

// Keeper calls fn.
func (fn KeeperFactoryFn) Keeper(app *v1beta1.Application, revision int64, policies resourcekeeper.Policies) (Keeper, error) {
	return fn(app, revision, policies)
}

// HealthChecker checks the health of one applied component from its
// rendered resources.
type HealthChecker interface {
	ComponentHealth(ctx context.Context, af *appfile.AppFile, req workflow.ComponentRequest, opts render.Options, resources []render.Resource) (workflow.ComponentHealth, error)
}

// HealthCheckerFn adapts a function to HealthChecker.
type HealthCheckerFn func(ctx context.Context, af *appfile.AppFile, req workflow.ComponentRequest, opts render.Options, resources []render.Resource) (workflow.ComponentHealth, error)

// ComponentHealth calls fn.
func (fn HealthCheckerFn) ComponentHealth(ctx context.Context, af *appfile.AppFile, req workflow.ComponentRequest, opts render.Options, resources []render.Resource) (workflow.ComponentHealth, error) {
	return fn(ctx, af, req, opts, resources)
}

// WorkflowRunner runs an Application's workflow (see package workflow).
type WorkflowRunner interface {
	Execute(ctx context.Context, run workflow.Run) (workflow.Result, error)
	Reset(ctx context.Context, app *v1beta1.Application) error
}
