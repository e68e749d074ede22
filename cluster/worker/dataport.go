package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"syscall"

	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/netexchange"
)

// ErrNoFreeDataPort is matched by the error of a worker whose every port of
// taskmanager.data.port is taken (by the other workers of its TaskManager,
// or another process).
var ErrNoFreeDataPort = errors.New("worker: no free port for the data endpoint")

// listenData opens the worker's data endpoint on host, at the first free
// port of spec (taskmanager.data.port: a port, a range such as 50100-50200,
// or a list of both; 0 or empty for any free port), so that every worker of
// a TaskManager finds a port of its own.
func listenData(host, spec string, sec *rpcauth.Security, log *slog.Logger) (*netexchange.Endpoint, error) {
	if spec == "" {
		spec = "0"
	}
	ports, err := conf.Ports(spec)
	if err != nil {
		return nil, fmt.Errorf("worker: %s: %w", conf.TaskManagerDataPort.Key(), err)
	}
	var last error
	for _, port := range ports {
		ep, err := netexchange.Listen(netexchange.Config{Address: net.JoinHostPort(host, strconv.Itoa(port)), Log: log,
			ServerOptions: sec.ServerOptions(), DialOptions: sec.DialOptions()})
		if err == nil {
			return ep, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("worker: opening the data endpoint: %w", err)
		}
		last = err
	}
	return nil, fmt.Errorf("%w on %s in %s %q: every port is in use (give as many ports as workers may run on the TaskManager at once): %w",
		ErrNoFreeDataPort, host, conf.TaskManagerDataPort.Key(), spec, last)
}
