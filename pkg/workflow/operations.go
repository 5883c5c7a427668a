package workflow

import (
	"github.com/oamflow/oamflow/apis/core.oam.dev/common"
	"github.com/oamflow/oamflow/pkg/workflowops"
)

// The operations a person runs on a workflow (suspend, resume, terminate,
// restart from a step) live in pkg/workflowops, which the CLI links without
// the engine's dependencies; the names below forward to it.

// Errors of the workflow operations (see workflowops).
var (
	ErrNotRunning   = workflowops.ErrNotRunning
	ErrNotSuspended = workflowops.ErrNotSuspended
	ErrUnknownStep  = workflowops.ErrUnknownStep
)

// SuspendStateManual is status.workflow.suspendState after a manual suspend.
const SuspendStateManual = workflowops.SuspendStateManual

// Node and Graph are the shape of a workflow as restart sees it.
type (
	Node  = workflowops.Node
	Graph = workflowops.Graph
)

// Suspend pauses an unfinished run (workflowops.Suspend).
func Suspend(st *common.WorkflowStatus) error { return workflowops.Suspend(st) }

// Resume continues a suspended run (workflowops.Resume).
func Resume(st *common.WorkflowStatus) error { return workflowops.Resume(st) }

// Terminate stops an unfinished run for good (workflowops.Terminate).
func Terminate(st *common.WorkflowStatus) error { return workflowops.Terminate(st) }
