package yarnam

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/sluice/sluice/hadoop"
)

// keyWebProxyAddress is the address of a stand-alone web proxy; unset, the
// proxy runs in the ResourceManager (its web app address).
const keyWebProxyAddress = "yarn.web-proxy.address"

// WebProxyHosts are the hosts YARN's web proxy runs on, which forward the
// tracking URL's requests to the ApplicationMaster:
// yarn.web-proxy.address, else every ResourceManager's web app address
// (yarn.resourcemanager.webapp.address, per RM id with HA).
func WebProxyHosts(h *hadoop.Configuration) ([]string, error) {
	if a := h.Get(keyWebProxyAddress, ""); a != "" {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("yarnam: %s %q is not host:port: %w", keyWebProxyAddress, a, err)
		}
		return []string{host}, nil
	}
	eps, err := h.WebAppAddresses()
	if err != nil {
		return nil, fmt.Errorf("yarnam: the ResourceManagers' web addresses: %w", err)
	}
	var hosts []string
	for _, ep := range eps {
		host, _, err := net.SplitHostPort(ep.Address)
		if err != nil {
			return nil, fmt.Errorf("yarnam: ResourceManager web address %q is not host:port: %w", ep.Address, err)
		}
		if !slices.Contains(hosts, host) {
			hosts = append(hosts, host)
		}
	}
	return hosts, nil
}

// ProxyMatcher reports whether a peer address is one of the web proxy
// hosts: their addresses are looked up at the first question and again
// when a peer is not among them, at most every refresh (a proxy host that
// moved to another address is then trusted again).
type ProxyMatcher struct {
	hosts   []string
	lookup  func(host string) ([]net.IP, error)
	now     func() time.Time
	refresh time.Duration

	mu       sync.Mutex
	ips      []net.IP
	resolved time.Time
}

// NewProxyMatcher matches the addresses of hosts, looked up with lookup
// (net.LookupIP when nil).
func NewProxyMatcher(hosts []string, lookup func(string) ([]net.IP, error)) *ProxyMatcher {
	if lookup == nil {
		lookup = net.LookupIP
	}
	return &ProxyMatcher{hosts: hosts, lookup: lookup, now: time.Now, refresh: time.Minute}
}

// Trusted reports whether ip is a proxy host's address.
func (m *ProxyMatcher) Trusted(ip net.IP) bool {
	if ip == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.has(ip) {
		return true
	}
	if !m.resolved.IsZero() && m.now().Sub(m.resolved) < m.refresh {
		return false
	}
	m.resolved = m.now()
	m.ips = m.ips[:0]
	for _, h := range m.hosts {
		if a := net.ParseIP(h); a != nil {
			m.ips = append(m.ips, a)
			continue
		}
		if ips, err := m.lookup(h); err == nil {
			m.ips = append(m.ips, ips...)
		}
	}
	return m.has(ip)
}

func (m *ProxyMatcher) has(ip net.IP) bool {
	return slices.ContainsFunc(m.ips, func(a net.IP) bool { return a.Equal(ip) })
}
