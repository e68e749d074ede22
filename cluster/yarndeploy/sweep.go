package yarndeploy

import (
	"context"
	"errors"
	"path"

	"github.com/sluice/sluice/yarn"
)

// staleVerdict is what the sweep decides about one entry of the staging
// base directory.
type staleVerdict int

const (
	// keepEntry: not an application's staging directory, or one whose
	// application may still run or run again.
	keepEntry staleVerdict = iota
	// removeEntry: the application has ended; nothing will read its
	// staging directory again.
	removeEntry
)

// judgeStaging decides whether the staging directory named name may be
// deleted, from what the ResourceManager said of the application of that
// name: its state (when found), or err (ErrApplicationNotFound: the
// ResourceManager does not know it). self is the application being
// deployed, whose cluster timestamp is the ResourceManager's.
//
// An application the ResourceManager reports in a final state (FINISHED,
// FAILED, KILLED) is gone for good: a `yarn application -kill` stops the
// ApplicationMaster with SIGTERM, and it cannot tell that from a stop after
// which YARN starts another attempt, so it leaves its staging directory; the
// next submission removes it. One the ResourceManager does not know is
// removed only when it comes from this ResourceManager's epoch (it forgot a
// completed application, yarn.resourcemanager.max-completed-applications):
// another cluster may share the HDFS home directory, and its applications
// are none of this ResourceManager's business.
func judgeStaging(name string, self yarn.ApplicationID, state yarn.ApplicationState, err error) staleVerdict {
	id, perr := yarn.ParseApplicationID(name)
	if perr != nil || id == self {
		return keepEntry
	}
	switch {
	case err == nil && state.Terminal():
		return removeEntry
	case errors.Is(err, yarn.ErrApplicationNotFound) && id.ClusterTimestamp == self.ClusterTimestamp:
		return removeEntry
	default:
		return keepEntry
	}
}

// sweepStaging deletes the staging directories, next to the one of self,
// of this user's applications that have ended (judgeStaging). It never fails
// a deployment: what it cannot list, ask about or delete is logged and left.
func (d *Deployer) sweepStaging(ctx context.Context, fsys stagingFS, self yarn.ApplicationID, base string) {
	entries, err := fsys.ReadDir(base)
	if err != nil {
		d.log.Warn("yarndeploy: could not list the staging directories", "dir", base, "err", err)
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id, perr := yarn.ParseApplicationID(e.Name())
		if perr != nil || id == self {
			continue
		}
		var state yarn.ApplicationState
		r, err := d.rm.GetApplicationReport(ctx, id)
		if err == nil {
			state = r.State
		}
		if judgeStaging(e.Name(), self, state, err) != removeEntry {
			if err != nil && !errors.Is(err, yarn.ErrApplicationNotFound) {
				d.log.Warn("yarndeploy: could not ask about an application with a staging directory", "application", id.String(), "err", err)
			}
			continue
		}
		dir := path.Join(base, e.Name())
		if err := fsys.RemoveAll(dir); err != nil {
			d.log.Warn("yarndeploy: could not delete a stale staging directory", "dir", dir, "err", err)
			continue
		}
		why := "unknown to the ResourceManager"
		if err == nil {
			why = state.String()
		}
		d.progress("Deleted the staging directory of ended application %s (%s)", id, why)
	}
}
