package yarnam

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
)

func TestWebProxyHosts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   map[string]string
		want    []string
		wantErr string
	}{
		{name: "in the ResourceManager", props: map[string]string{"yarn.resourcemanager.hostname": "rm1"}, want: []string{"rm1"}},
		{name: "its web app address", props: map[string]string{"yarn.resourcemanager.webapp.address": "rm-web:8088"}, want: []string{"rm-web"}},
		{name: "a stand-alone proxy", props: map[string]string{"yarn.resourcemanager.hostname": "rm1", "yarn.web-proxy.address": "proxy:9046"}, want: []string{"proxy"}},
		{name: "HA", props: map[string]string{"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "a,b",
			"yarn.resourcemanager.hostname.a": "rma", "yarn.resourcemanager.hostname.b": "rmb"}, want: []string{"rma", "rmb"}},
		{name: "a bad proxy address", props: map[string]string{"yarn.web-proxy.address": "proxy"}, wantErr: "yarn.web-proxy.address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hadoop.NewConfiguration(func(string) string { return "" })
			for k, v := range tc.props {
				h.Set(k, v)
			}
			got, err := WebProxyHosts(h)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestProxyMatcher: a proxy host's addresses are trusted, others not; a
// miss looks the hosts up again at most once a minute, so a proxy that
// moved is trusted at its new address.
func TestProxyMatcher(t *testing.T) {
	addrs := map[string][]net.IP{"proxy": {net.ParseIP("10.0.0.9")}}
	lookups := 0
	m := NewProxyMatcher([]string{"proxy", "10.0.0.7", "gone"}, func(h string) ([]net.IP, error) {
		lookups++
		if ips, ok := addrs[h]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	})
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	for _, step := range []struct {
		ip          string
		advance     time.Duration
		moveTo      string
		want        bool
		wantLookups int
	}{
		{ip: "10.0.0.9", want: true, wantLookups: 2},
		{ip: "10.0.0.7", want: true, wantLookups: 2},
		{ip: "10.0.0.1", want: false, wantLookups: 2},                     // within the minute: no new lookup
		{ip: "10.0.0.5", moveTo: "10.0.0.5", want: false, wantLookups: 2}, // moved, not yet looked up again
		{ip: "10.0.0.5", advance: time.Minute, want: true, wantLookups: 4},
		{ip: "10.0.0.9", want: false, wantLookups: 4}, // its old address
	} {
		now = now.Add(step.advance)
		if step.moveTo != "" {
			addrs["proxy"] = []net.IP{net.ParseIP(step.moveTo)}
		}
		if got := m.Trusted(net.ParseIP(step.ip)); got != step.want || lookups != step.wantLookups {
			t.Fatalf("Trusted(%s) = %v after %d lookups; want %v after %d", step.ip, got, lookups, step.want, step.wantLookups)
		}
	}
	if m.Trusted(nil) {
		t.Error("a nil address is trusted")
	}
}
