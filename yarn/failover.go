package yarn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/ipc"
)

// Java protocol names of the YARN protocols.
const (
	protocolClient = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	protocolAM     = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
	protocolNM     = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
)

// failoverCaller calls one protocol on a list of ResourceManager addresses,
// moving to the next address when the current one is in standby or cannot
// be reached (ResourceManager HA), with exponential backoff between tries.
type failoverCaller struct {
	ipc          *ipc.Client
	protocol     string
	user         string
	principal    string // the servers' Kerberos principal (with _HOST), "" without Kerberos
	token        ipc.TokenSource
	addrs        []string
	log          *slog.Logger
	maxFailovers int
	backoff      time.Duration
	maxBackoff   time.Duration

	mu struct {
		sync.Mutex
		current int
	}
}

func (f *failoverCaller) endpoint(i int) ipc.Endpoint {
	return ipc.Endpoint{Addr: f.addrs[i], Protocol: f.protocol, User: f.user, Token: f.token, ServerPrincipal: f.principal}
}

// shouldFailover decides which failures are worth another try, possibly on
// another ResourceManager: the RM is standby or asks for a retry, or could
// not be reached. All YARN methods Sluice calls are idempotent or
// at-most-once (protected by the RM's retry cache), so a lost connection is
// retried too.
func (f *failoverCaller) shouldFailover(err error) bool {
	switch {
	case errors.Is(err, hadoop.ErrStandby), errors.Is(err, hadoop.ErrRetriable):
		return true
	case errors.Is(err, ipc.ErrConnectionLost):
		return true
	case errors.Is(err, ipc.ErrConnect):
		return len(f.addrs) > 1 // with one RM, ipc already retried the dial
	}
	return false
}

func (f *failoverCaller) call(ctx context.Context, method string, req, resp proto.Message) error {
	backoff := f.backoff
	for attempt := 0; ; attempt++ {
		f.mu.Lock()
		idx := f.mu.current
		f.mu.Unlock()
		err := f.ipc.Call(ctx, f.endpoint(idx), method, req, resp, ipc.Idempotent())
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || attempt >= f.maxFailovers || !f.shouldFailover(err) {
			return f.translate(err)
		}
		if len(f.addrs) > 1 {
			f.mu.Lock()
			if f.mu.current == idx {
				f.mu.current = (idx + 1) % len(f.addrs)
			}
			next := f.mu.current
			f.mu.Unlock()
			f.log.Info("yarn: failing over to another ResourceManager", "method", method, "from", f.addrs[idx], "to", f.addrs[next], "err", err)
		} else {
			f.log.Info("yarn: retrying ResourceManager call", "method", method, "addr", f.addrs[idx], "backoff", backoff, "err", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		backoff = min(2*backoff, f.maxBackoff)
	}
}

// translate names the ResourceManager and its configuration key in a
// failure to connect.
func (f *failoverCaller) translate(err error) error {
	if !errors.Is(err, ipc.ErrConnect) {
		return err
	}
	key := "yarn.resourcemanager.address"
	if f.protocol == protocolAM {
		key = "yarn.resourcemanager.scheduler.address"
	}
	return fmt.Errorf("%w at %s (%s in yarn-site.xml): %w", ErrUnreachable, strings.Join(f.addrs, ", "), key, err)
}

// current returns the address in use.
func (f *failoverCaller) current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrs[f.mu.current]
}
