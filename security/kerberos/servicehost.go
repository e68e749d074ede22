package kerberos

import (
	"context"
	"net"
	"strings"
	"time"
)

// serviceHostLookupTimeout bounds the reverse lookup of [ServiceHost].
const serviceHostLookupTimeout = 5 * time.Second

// ServiceHost is the host a Hadoop client puts in place of _HOST in a
// server's principal (hdfs/_HOST@REALM) when it dials host. Hadoop's
// clients take the canonical host name of the address they dial
// (SecurityUtil.getServerPrincipal with InetAddress.getCanonicalHostName),
// so a cluster whose client configuration names its servers by IP address
// still gets principals of host names: an IP address is replaced by the
// first name a reverse lookup gives it (without its trailing dot), and
// kept when there is none, as Java does. A host name is kept as given.
// The result is lower-case, as Hadoop's.
func ServiceHost(host string) string {
	return serviceHost(host, func(ip string) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), serviceHostLookupTimeout)
		defer cancel()
		return net.DefaultResolver.LookupAddr(ctx, ip)
	})
}

func serviceHost(host string, lookupAddr func(string) ([]string, error)) string {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(h) == nil {
		return strings.ToLower(host)
	}
	names, err := lookupAddr(h)
	if err != nil || len(names) == 0 || strings.TrimSuffix(names[0], ".") == "" {
		return strings.ToLower(h)
	}
	return strings.ToLower(strings.TrimSuffix(names[0], "."))
}
