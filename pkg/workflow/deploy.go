package workflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	cuexruntime "github.com/kubevela/pkg/cue/cuex/runtime"
	providertypes "github.com/kubevela/workflow/pkg/providers/types"
)

// deployParams are the $params of oam.#Deploy.
type deployParams struct {
	Policies    []string `json:"policies,omitempty"`
	Parallelism int      `json:"parallelism,omitempty"`
}

type deployReturns struct {
	Healthy bool `json:"healthy"`
}

func deployProvider() cuexruntime.ProviderFn {
	return providertypes.GenericProviderFn[deployParams, providertypes.Returns[deployReturns]](
		func(ctx context.Context, p *providertypes.Params[deployParams]) (*providertypes.Returns[deployReturns], error) {
			r, err := deploy(ctx, p.Params, p.RuntimeParams)
			if err != nil {
				return nil, err
			}
			return &providertypes.Returns[deployReturns]{Returns: *r}, nil
		})
}

// deploy applies every component of every target of the step's policies,
// a component only once the components it depends on are healthy at that
// target; the step waits until all are healthy.
func deploy(ctx context.Context, p deployParams, rt providertypes.RuntimeParams) (*deployReturns, error) {
	run, ok := runFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("vela/oam: no Application deployer in this workflow run")
	}
	planner, ok := run.deployer.(DeployPlanner)
	if !ok {
		return nil, fail(rt, "this controller cannot run deploy steps")
	}
	targets, err := planner.PlanDeploy(ctx, p.Policies)
	if err != nil {
		if IsTerminal(err) {
			return nil, fail(rt, fmt.Sprintf("deploy: %v", err))
		}
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var waiting []string
	for _, t := range targets {
		healthy := map[string]bool{}
		for _, name := range t.Components {
			comp, ok := t.Deployer.Component(name)
			if !ok {
				continue
			}
			where := name
			if t.Cluster != "" && t.Cluster != "local" {
				where += "@" + t.Cluster
			}
			var blocked []string
			for _, d := range comp.DependsOn {
				if slices.Contains(t.Components, d) && !healthy[d] {
					blocked = append(blocked, d)
				}
			}
			if len(blocked) > 0 {
				waiting = append(waiting, fmt.Sprintf("%s (after %s)", where, strings.Join(blocked, ", ")))
				continue
			}
			res, err := applyOne(ctx, &runValues{deployer: t.Deployer, services: run.services}, comp,
				componentParams{Component: name, Cluster: t.Cluster, Namespace: t.Namespace}, rt)
			if err != nil {
				return nil, err
			}
			if res.waiting != "" {
				waiting = append(waiting, where+": "+res.waiting)
				continue
			}
			healthy[name] = true
		}
	}
	if len(waiting) > 0 {
		return nil, wait(rt, "waiting for "+strings.Join(waiting, "; "))
	}
	return &deployReturns{Healthy: true}, nil
}
