package taskmanager

import (
	"net"
	"testing"

	"github.com/sluice/sluice/conf"
)

func TestAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, host, bindHost, bind, advertise string
	}{
		{"nothing configured: loopback", "", "", "127.0.0.1", "127.0.0.1"},
		{"taskmanager.host binds and advertises", "10.0.0.12", "", "10.0.0.12", "10.0.0.12"},
		{"all interfaces advertise the host name", "", "0.0.0.0", "0.0.0.0", "worker-7"},
		{"all interfaces (IPv6) advertise the host name", "", "::", "::", "worker-7"},
		{"one interface is advertised", "", "10.0.0.5", "10.0.0.5", "10.0.0.5"},
		{"bind-host and host apart", "tm.example.com", "0.0.0.0", "0.0.0.0", "tm.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bind, adv := Addresses(tc.host, tc.bindHost, "worker-7")
			if bind != tc.bind || adv != tc.advertise {
				t.Errorf("Addresses(%q, %q) = %q, %q; want %q, %q", tc.host, tc.bindHost, bind, adv, tc.bind, tc.advertise)
			}
		})
	}
}

// A TaskManager nobody gave an address listens on loopback only and says
// so to the JobManager.
func TestTaskManagerBindsLoopbackByDefault(t *testing.T) {
	cfg := ConfigFrom(conf.New())
	cfg.WorkDir = t.TempDir()
	tm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if ip := tm.lis.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("the RPC endpoint listens on %s, want 127.0.0.1", tm.lis.Addr())
	}
	if host, _, _ := net.SplitHostPort(tm.Address()); host != "127.0.0.1" {
		t.Errorf("the TaskManager advertises %s, want 127.0.0.1", tm.Address())
	}
}
