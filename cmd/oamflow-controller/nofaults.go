//go:build !faults

package main

import "k8s.io/client-go/transport"

// faultTransport is nil: only a controller built with -tags faults (the
// fault suite's, see faults.go) injects API errors.
func faultTransport() (transport.WrapperFunc, error) { return nil, nil }
