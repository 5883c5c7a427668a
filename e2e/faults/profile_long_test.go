//go:build faults

package faults

import "time"

// runProfile is the long variant (make faults).
func runProfile() profile {
	return profile{
		apps: 50, kills: 20, apiserverRestarts: 2, etcdRestarts: 1, memberOutages: 2, trackerLosses: 3,
		outageMin: 30 * time.Second, outageMax: 120 * time.Second,
		gapMin: 3 * time.Second, gapMax: 8 * time.Second,
		writeFaults: 0.05, watchDelays: 0.2, converge: 5 * time.Minute,
	}
}
