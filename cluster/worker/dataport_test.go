package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/netexchange"
)

// freePortPair finds two consecutive free loopback ports.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 100 {
		l1, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l1.Addr().(*net.TCPAddr).Port
		if p == 65535 {
			l1.Close()
			continue
		}
		l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		l1.Close()
		if err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports")
	return 0
}

func portOf(t *testing.T, ep *netexchange.Endpoint) int {
	t.Helper()
	_, port, err := net.SplitHostPort(ep.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every worker of a TaskManager binds the first free port of
// taskmanager.data.port: two workers share a range of two ports, a third
// finds none and says which ports it tried; once a worker exits, its port
// serves the next (a restarted attempt's).
func TestDataEndpointsTakeTheFirstFreePort(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	p := freePortPair(t)
	spec := fmt.Sprintf("%d-%d", p, p+1)
	var eps []*netexchange.Endpoint
	for i := range 2 {
		ep, err := listenData("127.0.0.1", spec, nil, log)
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		defer ep.Close()
		if got := portOf(t, ep); got != p+i {
			t.Fatalf("worker %d listens on %d, want %d", i, got, p+i)
		}
		eps = append(eps, ep)
	}
	_, err := listenData("127.0.0.1", spec, nil, log)
	want := fmt.Sprintf(`no free port for the data endpoint on 127.0.0.1 in taskmanager.data.port %q: every port is in use`, spec)
	if !errors.Is(err, ErrNoFreeDataPort) || !strings.Contains(err.Error(), want) {
		t.Fatalf("third worker: got %v, want %q", err, want)
	}
	eps[0].Close()
	ep, err := listenData("127.0.0.1", spec, nil, log)
	if err != nil {
		t.Fatalf("after the first worker exited: %v", err)
	}
	defer ep.Close()
	if got := portOf(t, ep); got != p {
		t.Fatalf("the next worker listens on %d, want the freed %d", got, p)
	}
}

func TestDataEndpointSpecs(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	p := freePortPair(t)
	tests := []struct {
		name, host, spec string
		port             int    // the port expected, -1 for any
		err              string // a substring of the error, if it fails
		valueErr         bool   // whether the error is a *conf.ValueError
	}{
		{"any free port", "127.0.0.1", "0", -1, "", false},
		{"none given", "127.0.0.1", "", -1, "", false},
		{"one port", "127.0.0.1", strconv.Itoa(p), p, "", false},
		{"a list", "127.0.0.1", fmt.Sprintf("%d,%d", p+1, p), p + 1, "", false},
		{"malformed", "127.0.0.1", "50100-x", 0, `worker: taskmanager.data.port: invalid port specification "50100-x"`, true},
		// TEST-NET-1 is no address of this host: no port would do.
		{"not this host", "192.0.2.1", "0", 0, "worker: opening the data endpoint: netexchange: listening on 192.0.2.1:0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := listenData(tt.host, tt.spec, nil, log)
			if tt.err != "" {
				var ve *conf.ValueError
				if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, ErrNoFreeDataPort) || errors.As(err, &ve) != tt.valueErr {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			if got := portOf(t, ep); tt.port >= 0 && got != tt.port {
				t.Fatalf("listens on %d, want %d", got, tt.port)
			}
		})
	}
}
