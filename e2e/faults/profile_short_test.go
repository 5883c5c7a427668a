//go:build e2e && !faults

package faults

import "time"

// runProfile is the short variant run with the e2e tests (make e2e).
func runProfile() profile {
	return profile{
		apps: 10, kills: 5, apiserverRestarts: 1, memberOutages: 1, trackerLosses: 1,
		outageMin: 30 * time.Second, outageMax: 31 * time.Second,
		gapMin: 2 * time.Second, gapMax: 5 * time.Second,
		writeFaults: 0.05, watchDelays: 0.2, converge: 6 * time.Minute,
	}
}
