package hadoop

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Configuration keys Sluice reads (Hadoop's names).
const (
	KeyDefaultFS              = "fs.defaultFS"
	KeySecurityAuthentication = "hadoop.security.authentication"
	KeyRPCProtection          = "hadoop.rpc.protection"

	// KeyFallbackToSimpleAuthAllowed lets a client with a Kerberos login
	// continue when a server asks it to switch to SIMPLE authentication
	// (a server with security off, or one pretending to be). Default false.
	KeyFallbackToSimpleAuthAllowed = "ipc.client.fallback-to-simple-auth-allowed"

	KeyRMHostname         = "yarn.resourcemanager.hostname"
	KeyRMAddress          = "yarn.resourcemanager.address"
	KeyRMSchedulerAddress = "yarn.resourcemanager.scheduler.address"
	KeyRMWebAppAddress    = "yarn.resourcemanager.webapp.address"
	KeyRMHAEnabled        = "yarn.resourcemanager.ha.enabled"
	KeyRMHAIDs            = "yarn.resourcemanager.ha.rm-ids"
)

// Default ports of the ResourceManager services (yarn-default.xml).
const (
	DefaultRMPort          = 8032
	DefaultRMSchedulerPort = 8030
	DefaultRMWebAppPort    = 8088
)

// AuthMethod is the value of hadoop.security.authentication.
type AuthMethod string

// Authentication methods.
const (
	AuthSimple   AuthMethod = "simple"
	AuthKerberos AuthMethod = "kerberos"
)

// QOP is a SASL quality of protection, from hadoop.rpc.protection.
type QOP string

// SASL qualities of protection, with their SASL names.
const (
	QOPAuthentication QOP = "auth"      // hadoop.rpc.protection=authentication
	QOPIntegrity      QOP = "auth-int"  // hadoop.rpc.protection=integrity
	QOPPrivacy        QOP = "auth-conf" // hadoop.rpc.protection=privacy
)

// RMEndpoint is one ResourceManager service address. ID is the HA rm-id
// ("" when HA is off).
type RMEndpoint struct {
	ID      string
	Address string // host:port
}

// DefaultFS returns fs.defaultFS (file:/// when unset).
func (c *Configuration) DefaultFS() string { return c.Get(KeyDefaultFS, "file:///") }

// SecurityAuthentication returns hadoop.security.authentication: simple or
// kerberos. Anything else is an error naming the value.
func (c *Configuration) SecurityAuthentication() (AuthMethod, error) {
	v := strings.ToLower(c.Get(KeySecurityAuthentication, string(AuthSimple)))
	switch AuthMethod(v) {
	case AuthSimple, AuthKerberos:
		return AuthMethod(v), nil
	}
	return "", fmt.Errorf("%w: %s=%q, want simple or kerberos", ErrBadConfig, KeySecurityAuthentication, v)
}

// RPCProtection returns the accepted SASL qualities of protection, from
// hadoop.rpc.protection (a list of authentication, integrity, privacy), in
// the configured order.
func (c *Configuration) RPCProtection() ([]QOP, error) {
	vals, err := c.Strings(KeyRPCProtection)
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return []QOP{QOPAuthentication}, nil
	}
	out := make([]QOP, 0, len(vals))
	for _, v := range vals {
		switch strings.ToLower(v) {
		case "authentication":
			out = append(out, QOPAuthentication)
		case "integrity":
			out = append(out, QOPIntegrity)
		case "privacy":
			out = append(out, QOPPrivacy)
		default:
			return nil, fmt.Errorf("%w: %s contains %q, want authentication, integrity or privacy", ErrBadConfig, KeyRPCProtection, v)
		}
	}
	return out, nil
}

// FallbackToSimpleAuthAllowed reports
// ipc.client.fallback-to-simple-auth-allowed (default false): whether a
// client with a Kerberos login may continue unauthenticated when a server
// asks it to fall back to SIMPLE.
func (c *Configuration) FallbackToSimpleAuthAllowed() (bool, error) {
	return c.Bool(KeyFallbackToSimpleAuthAllowed, false)
}

// RMHAEnabled reports yarn.resourcemanager.ha.enabled.
func (c *Configuration) RMHAEnabled() (bool, error) { return c.Bool(KeyRMHAEnabled, false) }

// ResourceManagerAddresses returns the ApplicationClientProtocol addresses
// (yarn.resourcemanager.address) of every ResourceManager, in rm-ids order
// when HA is enabled.
func (c *Configuration) ResourceManagerAddresses() ([]RMEndpoint, error) {
	return c.rmAddresses(KeyRMAddress, DefaultRMPort)
}

// SchedulerAddresses returns the ApplicationMasterProtocol addresses
// (yarn.resourcemanager.scheduler.address) of every ResourceManager.
func (c *Configuration) SchedulerAddresses() ([]RMEndpoint, error) {
	return c.rmAddresses(KeyRMSchedulerAddress, DefaultRMSchedulerPort)
}

// WebAppAddresses returns the web UI addresses
// (yarn.resourcemanager.webapp.address) of every ResourceManager.
func (c *Configuration) WebAppAddresses() ([]RMEndpoint, error) {
	return c.rmAddresses(KeyRMWebAppAddress, DefaultRMWebAppPort)
}

// rmAddresses resolves one RM service address per RM. Without HA it is the
// key itself (default ${yarn.resourcemanager.hostname}:port). With HA, for
// each id in yarn.resourcemanager.ha.rm-ids it is key.<id>, else
// yarn.resourcemanager.hostname.<id>:port, as Hadoop's HAUtil resolves them.
func (c *Configuration) rmAddresses(key string, defPort int) ([]RMEndpoint, error) {
	ha, err := c.RMHAEnabled()
	if err != nil {
		return nil, err
	}
	if !ha {
		addr, err := c.socketAddress(key, KeyRMHostname, defPort)
		if err != nil {
			return nil, err
		}
		return []RMEndpoint{{Address: addr}}, nil
	}
	ids, err := c.Strings(KeyRMHAIDs)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: %s is true but %s lists no ResourceManager", ErrBadConfig, KeyRMHAEnabled, KeyRMHAIDs)
	}
	out := make([]RMEndpoint, 0, len(ids))
	for _, id := range ids {
		addr, err := c.socketAddress(key+"."+id, KeyRMHostname+"."+id, defPort)
		if err != nil {
			return nil, fmt.Errorf("ResourceManager %q: %w", id, err)
		}
		out = append(out, RMEndpoint{ID: id, Address: addr})
	}
	return out, nil
}

// socketAddress reads key as host[:port]; if key is unset it is built from
// hostKey and defPort. The result is host:port, validated.
func (c *Configuration) socketAddress(key, hostKey string, defPort int) (string, error) {
	v, ok, err := c.Lookup(key)
	if err != nil {
		return "", err
	}
	v = strings.TrimSpace(v)
	src := key
	if !ok || v == "" {
		host, hok, herr := c.Lookup(hostKey)
		if herr != nil {
			return "", herr
		}
		host = strings.TrimSpace(host)
		if !hok || host == "" {
			return "", fmt.Errorf("%w: neither %s nor %s is set", ErrBadConfig, key, hostKey)
		}
		v = net.JoinHostPort(host, strconv.Itoa(defPort))
		src = hostKey
	}
	var host, port string
	if !strings.Contains(v, ":") {
		// Hadoop accepts a bare host and applies the default port.
		host, port = v, strconv.Itoa(defPort)
	} else if host, port, err = net.SplitHostPort(v); err != nil {
		return "", fmt.Errorf("%w: %s=%q is not host:port: %v", ErrBadConfig, src, v, err)
	}
	if host == "" {
		return "", fmt.Errorf("%w: %s=%q has no host", ErrBadConfig, src, v)
	}
	if n, perr := strconv.Atoi(port); perr != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("%w: %s=%q has port %q, want 1-65535", ErrBadConfig, src, v, port)
	}
	return net.JoinHostPort(host, port), nil
}
