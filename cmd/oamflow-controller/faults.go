//go:build faults

package main

import (
	"os"

	"k8s.io/client-go/transport"

	"github.com/oamflow/oamflow/e2e/faults/inject"
)

// faultTransport is the fault suite's API-error injector (e2e/faults),
// linked only into a controller built with -tags faults and configured by
// $OAMFLOW_FAULTS_INJECT; nil when the variable is unset.
func faultTransport() (transport.WrapperFunc, error) {
	s := os.Getenv(inject.EnvVar)
	if s == "" {
		return nil, nil
	}
	cfg, err := inject.Parse(s)
	if err != nil {
		return nil, err
	}
	return inject.New(cfg, os.Stderr).Wrap, nil
}
