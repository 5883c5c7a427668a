package helmspec

import (
	"errors"
	"time"
)

// Action is what an operation did to a release.
type Action string

// Actions reported in Result.Action.
const (
	ActionInstalled   Action = "Installed"
	ActionUpgraded    Action = "Upgraded"
	ActionUnchanged   Action = "Unchanged"
	ActionRolledBack  Action = "RolledBack"
	ActionUninstalled Action = "Uninstalled"
	ActionNotFound    Action = "NotFound"
	// ActionNotOwned: the release belongs to another Application (or to
	// none) and was left alone.
	ActionNotOwned Action = "NotOwned"
	// ActionPending: another operation holds the release and its grace
	// period has not passed; Result.RetryAfter says when to look again.
	ActionPending Action = "Pending"
)

// Result reports one operation.
type Result struct {
	Action  Action
	Release ReleaseInfo
	// Recovery is non-empty when a stuck or failed release was repaired on
	// the way (which release, what state, what was done); worth an Event.
	Recovery string
	// RetryAfter is set with ActionPending.
	RetryAfter time.Duration
}

// ErrOperationInProgress is returned with ActionPending: the release is in
// a pending-* state younger than the grace period.
var ErrOperationInProgress = errors.New("another operation on the release is in progress")

// ReleaseOwner is who a release belongs to (the Helm client's Owner).
type ReleaseOwner struct {
	// Exists is false when there is no release of that name.
	Exists bool
	// Owner is the Application recorded on the release's newest revision;
	// zero when none is.
	Owner Owner
	// Oamflow reports that oamflow made the newest revision (it carries
	// LabelDigest): with a zero Owner, a release installed before releases
	// recorded their owner.
	Oamflow bool
	Release ReleaseInfo
}
