package appfile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Clusters checks that the clusters an Application's topology policies
// name are registered (multicluster.Registry implements it). An error that
// has FieldErrors is the Application's fault; any other error means the
// clusters could not be checked.
type Clusters interface {
	ValidateTopologies(ctx context.Context, policies []common.AppPolicy) error
}

// FieldErrorer is an error about fields of an Application (a Clusters
// error naming the policies' cluster fields).
type FieldErrorer interface {
	error
	FieldErrors() []FieldError
}

// Validate decides whether app can be deployed as written, and is the one
// place every entry point asks (the controller's parse phase, the
// admission webhook, `up` and `dry-run`): it parses app against src
// (components, traits, policies and workflow steps with their definitions
// resolved, properties checked against each definition's parameter),
// resolves the definitions of the steps the workflow runs, and checks the
// clusters of its topology policies with clusters (nil: not checked).
// Before any of that it checks app against the Budgets ctx carries
// (WithBudgets; DefaultBudgets otherwise): an Application over one is
// refused without reading a definition.
//
// Problems that are the Application's come back together, all at once, as
// one *InvalidError, whose message is the same wherever it is shown.
// Warnings are problems that do not stop it (a trait outside its
// appliesToWorkloads); they never make an error. Any other error (a
// definition or the cluster registry that cannot be read) is returned as
// it is: asking again may succeed.
func Validate(ctx context.Context, app *v1beta1.Application, src DefinitionSource, clusters Clusters) (*AppFile, []string, error) {
	if app == nil {
		return nil, nil, errors.New("validate: nil Application")
	}
	if over := checkBudgets(app, BudgetsFrom(ctx)); len(over) > 0 {
		// Refused before any definition is read or evaluated.
		ns := app.Namespace
		if ns == "" {
			ns = "default"
		}
		return nil, nil, &InvalidError{App: ns + "/" + app.Name, Errors: over}
	}
	af, err := Parse(ctx, app, src)
	var invalid *InvalidError
	switch {
	case errors.As(err, &invalid):
	case err != nil:
		return nil, nil, err
	default:
		invalid = &InvalidError{App: af.Namespace + "/" + af.Name}
		if err := resolveSteps(ctx, af, invalid); err != nil {
			return nil, nil, err
		}
	}
	if clusters != nil {
		err := clusters.ValidateTopologies(ctx, app.Spec.Policies)
		var fe FieldErrorer
		switch {
		case errors.As(err, &fe):
			invalid.Errors = append(invalid.Errors, fe.FieldErrors()...)
		case err != nil && len(invalid.Errors) == 0:
			return nil, nil, err
		}
	}
	if len(invalid.Errors) > 0 {
		return nil, nil, invalid
	}
	return af, af.Warnings, nil
}

// IsInvalid reports whether err says the Application cannot be deployed
// as written (an *InvalidError): asking again without a change gives the
// same answer.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// resolveSteps resolves the definition of every step and sub-step the
// workflow runs (the default workflow's apply-component or deploy steps
// have no spec path: Parse does not resolve them), so that a step type
// missing from the definitions is reported now and a revision snapshots
// them all.
func resolveSteps(ctx context.Context, af *AppFile, invalid *InvalidError) error {
	if af.Workflow == nil {
		return nil
	}
	check := func(path string, s *WorkflowStep) error {
		_, err := s.Definition(ctx)
		var de *DefinitionError
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrDefinitionNotFound):
			invalid.Errors = append(invalid.Errors, FieldError{Path: path, Subject: fmt.Sprintf("workflow step %q", s.Name),
				Message: fmt.Sprintf("unknown workflow-step type %q (no workflow-step definition of that name)", s.Type)})
			return nil
		case errors.As(err, &de):
			invalid.Errors = append(invalid.Errors, FieldError{Path: path, Subject: fmt.Sprintf("workflow step %q", s.Name),
				Message: fmt.Sprintf("workflow-step definition %q cannot be used: %v", s.Type, err)})
			return nil
		}
		return fmt.Errorf("resolving workflow step %q (type %q): %w", s.Name, s.Type, err)
	}
	for i, s := range af.Workflow.Steps {
		path := fmt.Sprintf("spec.workflow.steps[%d].type", i)
		if af.Workflow.Default {
			path = "spec.workflow"
		}
		if err := check(path, s); err != nil {
			return err
		}
		if !af.Workflow.Default {
			checkStepReferences(af, fmt.Sprintf("spec.workflow.steps[%d]", i), s, invalid)
		}
		for j, sub := range s.SubSteps {
			if err := check(fmt.Sprintf("spec.workflow.steps[%d].subSteps[%d].type", i, j), sub); err != nil {
				return err
			}
			checkStepReferences(af, fmt.Sprintf("spec.workflow.steps[%d].subSteps[%d]", i, j), sub, invalid)
		}
	}
	return nil
}

// checkStepReferences records, for the built-in steps that name parts of
// the Application, the names that are not there: an apply-component
// step's component, a deploy step's policies. A name given by the step's
// inputs (absent here) is checked when the step runs.
func checkStepReferences(af *AppFile, at string, s *WorkflowStep, invalid *InvalidError) {
	subject := fmt.Sprintf("workflow step %q", s.Name)
	switch s.Type {
	case StepTypeApplyComponent:
		if name, ok := s.Properties["component"].(string); ok && af.Component(name) == nil {
			names := make([]string, 0, len(af.Components))
			for _, c := range af.Components {
				names = append(names, c.Name)
			}
			invalid.Errors = append(invalid.Errors, FieldError{Path: at + ".properties.component", Subject: subject,
				Message: fmt.Sprintf("unknown component %q (the Application's components: %s)", name, listOrNone(names))})
		}
	case StepTypeDeploy:
		list, _ := s.Properties["policies"].([]any)
		for k, v := range list {
			name, ok := v.(string)
			if !ok || af.Policy(name) != nil {
				continue
			}
			names := make([]string, 0, len(af.Policies))
			for _, p := range af.Policies {
				names = append(names, p.Name)
			}
			invalid.Errors = append(invalid.Errors, FieldError{Path: fmt.Sprintf("%s.properties.policies[%d]", at, k), Subject: subject,
				Message: fmt.Sprintf("unknown policy %q (the Application's policies: %s)", name, listOrNone(names))})
		}
	}
}

// listOrNone joins names with ", ", or says "none".
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
