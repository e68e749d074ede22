package yarndeploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sluice/sluice/yarn"
)

// ErrNotRunning: the application named (yarn.application.id) exists but
// is not RUNNING, so it has no REST endpoint to talk to.
var ErrNotRunning = errors.New("yarndeploy: the application is not running")

// SessionAddress returns the REST address (host:port) of the running
// application id, from its report (the host and port its
// ApplicationMaster registered), as Flink's client finds a YARN session.
// An unknown id is an error matching yarn.ErrApplicationNotFound; an
// application that is not RUNNING one matching ErrNotRunning.
func (d *Deployer) SessionAddress(ctx context.Context, id yarn.ApplicationID) (string, error) {
	r, err := d.rm.GetApplicationReport(ctx, id)
	if errors.Is(err, yarn.ErrApplicationNotFound) {
		return "", fmt.Errorf("yarndeploy: YARN knows no application %s (yarn.application.id): %w", id, err)
	}
	if err != nil {
		return "", fmt.Errorf("yarndeploy: the report of %s: %w", id, err)
	}
	if r.State != yarn.StateRunning {
		return "", fmt.Errorf("%w: %s is %s (final status %s) %s", ErrNotRunning, id, r.State, r.FinalStatus, briefDiagnostics(r.Diagnostics))
	}
	if r.Host == "" || r.RPCPort <= 0 {
		return "", fmt.Errorf("%w: %s runs but registered no REST endpoint (host %q, port %d): is it a Sluice application?", ErrNotRunning, id, r.Host, r.RPCPort)
	}
	return net.JoinHostPort(r.Host, strconv.Itoa(int(r.RPCPort))), nil
}

// WaitEnd follows the application until it ends, printing its state
// changes, and returns its last report; an application that did not end
// SUCCEEDED is also an error, a *yarn.ApplicationError.
func (d *Deployer) WaitEnd(ctx context.Context, id yarn.ApplicationID) (*yarn.ApplicationReport, error) {
	t := time.NewTicker(d.opts.PollInterval)
	defer t.Stop()
	var last yarn.ApplicationState
	var attempt int32
	for {
		r, err := d.rm.GetApplicationReport(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("yarndeploy: following %s: %w", id, err)
		}
		// A new attempt: the ApplicationMaster (or its host) died and YARN
		// started another, which recovers the jobs.
		if now := r.CurrentAttempt.Attempt; attempt != 0 && now > attempt {
			why := briefDiagnostics(r.Diagnostics)
			if why != "" {
				why = ": " + why
			}
			d.progress("%s: ApplicationMaster attempt %d ended; YARN started attempt %d, which recovers the jobs%s", id, attempt, now, why)
		}
		if now := r.CurrentAttempt.Attempt; now > 0 {
			attempt = now
		}
		if r.State != last {
			switch {
			case last == 0 && r.State == yarn.StateRunning:
			case r.State == yarn.StateRunning && r.Host != "" && attempt > 0:
				d.progress("%s is RUNNING: ApplicationMaster attempt %d on %s", id, attempt, r.Host)
			default:
				d.progress("%s is %s", id, r.State)
			}
			last = r.State
		}
		if r.State.Terminal() {
			d.progress("%s ended %s, final status %s: %s", id, r.State, r.FinalStatus, r.Diagnostics)
			if r.FinalStatus != yarn.FinalSucceeded {
				return r, &yarn.ApplicationError{ID: id, State: r.State, FinalStatus: r.FinalStatus, Diagnostics: r.Diagnostics}
			}
			return r, nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return r, fmt.Errorf("yarndeploy: waiting for %s to end (it is %s): %w", id, r.State, ctx.Err())
		}
	}
}
