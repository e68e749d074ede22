// Package dockercluster runs Sluice's dockerized multi-host test cluster for integration tests:
// a Hadoop master (NameNode + ResourceManager), three workers (DataNode + NodeManager) and three
// Kafka KRaft brokers, each its own container and host on one Docker network, started and stopped
// through integration/scripts/docker-cluster.sh. Clients (the test, the sluice CLI) run on the
// Docker host, outside the containers, and reach every daemon at the address it publishes.
//
// With [Options.Secure] (docker-cluster.sh start --secure) it is the Kerberized variant: a KDC
// host besides, Kerberos on every Hadoop daemon and a GSSAPI listener on every broker; READY then
// names the client's krb5.conf, principal and keytab ([Cluster.Secure], KeyKrb5Conf, ...).
//
// The fault helpers act on one node the way a real cluster loses it: [Cluster.Kill] (the host
// dies: docker kill), [Cluster.Pause] (it hangs), [Cluster.Disconnect] (a network partition:
// docker network disconnect) and their reversals.
//
//	func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := dockercluster.Shared(t)
//		// HADOOP_CONF_DIR=c.ConfDir, Kafka at c.Bootstrap()
//	}
package dockercluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// Roles of nodes.
const (
	RoleMaster = "master" // NameNode + ResourceManager
	RoleWorker = "worker" // DataNode + NodeManager
	RoleKafka  = "kafka"  // Kafka broker + KRaft controller
	RoleKDC    = "kdc"    // the secure variant's MIT Kerberos KDC
)

// Errors of this package; returned errors wrap one of them.
var (
	// ErrScript: docker-cluster.sh failed (no Docker engine, no root, an image build or the
	// cluster's start failed); the error carries the script's output.
	ErrScript = errors.New("dockercluster: docker-cluster.sh failed")
	// ErrReady: the READY file the script wrote is malformed.
	ErrReady = errors.New("dockercluster: malformed READY file")
	// ErrNoNode: a node name that is not one of the cluster's.
	ErrNoNode = errors.New("dockercluster: no such node")
	// ErrDocker: a docker command of a fault helper failed.
	ErrDocker = errors.New("dockercluster: docker command failed")
)

// Node is one host of the cluster.
type Node struct {
	Name      string // its name in the cluster and host name: master, worker1, kafka2, ...
	Container string // the Docker container's name
	IP        string // the address it publishes, reachable from the Docker host
	Role      string // RoleMaster, RoleWorker or RoleKafka
}

// Cluster is a running docker cluster.
type Cluster struct {
	// Dir is the directory the script wrote (READY, conf/).
	Dir string
	// ConfDir is the Hadoop client conf dir (core-site.xml, hdfs-site.xml, yarn-site.xml): what
	// HADOOP_CONF_DIR points a client at.
	ConfDir string
	// Network is the Docker network the nodes are on.
	Network string
	// Nodes lists the nodes in the script's order (master, workers, brokers).
	Nodes []Node
	// Fields holds every key of READY.
	Fields map[string]string

	script string
	logf   func(string, ...any)
}

// ParseReady parses the READY file of docker-cluster.sh (key=value lines; node.NAME=CONTAINER IP
// HOSTNAME ROLE). path names the file in errors.
func ParseReady(path string, data []byte) (*Cluster, error) {
	c := &Cluster{Fields: map[string]string{}}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			problems = append(problems, fmt.Sprintf("line %d %q is not key=value", n, line))
			continue
		}
		c.Fields[k] = v
		name, isNode := strings.CutPrefix(k, "node.")
		if !isNode {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 4 {
			problems = append(problems, fmt.Sprintf("line %d: %s=%q is not CONTAINER IP HOSTNAME ROLE", n, k, v))
			continue
		}
		if net.ParseIP(f[1]) == nil {
			problems = append(problems, fmt.Sprintf("line %d: node %s: %q is not an IP address", n, name, f[1]))
		}
		switch f[3] {
		case RoleMaster, RoleWorker, RoleKafka, RoleKDC:
		default:
			problems = append(problems, fmt.Sprintf("line %d: node %s: unknown role %q", n, name, f[3]))
		}
		c.Nodes = append(c.Nodes, Node{Name: name, Container: f[0], IP: f[1], Role: f[3]})
	}
	c.ConfDir, c.Network = c.Fields["conf_dir"], c.Fields["network"]
	if c.ConfDir == "" {
		problems = append(problems, "no conf_dir")
	}
	if c.Network == "" {
		problems = append(problems, "no network")
	}
	roles := map[string]int{}
	for _, n := range c.Nodes {
		roles[n.Role]++
	}
	if roles[RoleMaster] != 1 || roles[RoleWorker] == 0 || roles[RoleKafka] == 0 {
		problems = append(problems, fmt.Sprintf("want one master, workers and brokers; have %d, %d and %d",
			roles[RoleMaster], roles[RoleWorker], roles[RoleKafka]))
	}
	if c.Secure() {
		for _, k := range []string{KeyRealm, KeyKrb5Conf, KeyClientPrincipal, KeyClientKeytab, KeyGSSAPIBootstrap} {
			if c.Fields[k] == "" {
				problems = append(problems, "secure=true without "+k)
			}
		}
		if roles[RoleKDC] != 1 {
			problems = append(problems, fmt.Sprintf("secure=true wants one kdc node, have %d", roles[RoleKDC]))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w %s: %s", ErrReady, path, strings.Join(problems, "; "))
	}
	return c, nil
}

// READY keys of the secure variant (docker-cluster.sh start --secure).
const (
	KeySecure          = "secure"           // "true"
	KeyRealm           = "realm"            // the Kerberos realm
	KeyKrb5Conf        = "krb5_conf"        // a krb5.conf naming the KDC, for clients on the Docker host
	KeyClientPrincipal = "client_principal" // the client principal, sluice@REALM
	KeyClientKeytab    = "client_keytab"    // its keytab
	KeyGSSAPIBootstrap = "gssapi_bootstrap" // the brokers' SASL_PLAINTEXT GSSAPI listeners, kafkaN:9094,...
)

// Secure reports whether the cluster is the Kerberized variant.
func (c *Cluster) Secure() bool { return c.Fields[KeySecure] == "true" }

// Options configures [Start].
type Options struct {
	// Dir is the directory the script writes READY and conf/ to; default: a new temporary
	// directory.
	Dir string
	// Logf receives progress lines; default: discarded.
	Logf func(format string, args ...any)
	// Secure starts the Kerberized variant (start --secure).
	Secure bool
}

// Start starts the cluster through docker-cluster.sh start (starting dockerd and building the
// images first when needed) and returns it once every node serves.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	script, err := harness.Script("docker-cluster.sh")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "sluice-docker-cluster-"); err != nil {
			return nil, fmt.Errorf("dockercluster: %w", err)
		}
	}
	t0 := time.Now()
	args := []string{"start", dir}
	if opts.Secure {
		args = []string{"start", "--secure", dir}
	}
	logf("dockercluster: starting the cluster (%s %s)", script, strings.Join(args, " "))
	if out, err := run(ctx, script, args...); err != nil {
		// Whatever it started (dockerd, containers) is stopped again.
		stopOut, _ := run(context.WithoutCancel(ctx), script, "stop", dir)
		return nil, fmt.Errorf("%w: start %s: %v\n%s\n%s", ErrScript, dir, err, out, stopOut)
	}
	path := filepath.Join(dir, "READY")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dockercluster: %w", err)
	}
	c, err := ParseReady(path, data)
	if err != nil {
		return nil, err
	}
	c.Dir, c.script, c.logf = dir, script, logf
	logf("dockercluster: cluster up in %v", time.Since(t0).Round(time.Second))
	return c, nil
}

// Stop removes the cluster's containers and network, and stops dockerd and restores the host's
// iptables if the script started them.
func (c *Cluster) Stop(ctx context.Context) error {
	if out, err := run(ctx, c.script, "stop", c.Dir); err != nil {
		return fmt.Errorf("%w: stop %s: %v\n%s", ErrScript, c.Dir, err, out)
	}
	return nil
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Node returns the node called name.
func (c *Cluster) Node(name string) (Node, error) {
	i := slices.IndexFunc(c.Nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, fmt.Errorf("%w: %q in %s", ErrNoNode, name, c.Dir)
	}
	return c.Nodes[i], nil
}

// Role returns the nodes of a role, in order.
func (c *Cluster) Role(role string) []Node {
	var ns []Node
	for _, n := range c.Nodes {
		if n.Role == role {
			ns = append(ns, n)
		}
	}
	return ns
}

// Master returns the master node.
func (c *Cluster) Master() Node { return c.Role(RoleMaster)[0] }

// Bootstrap returns the brokers' client addresses (host:port).
func (c *Cluster) Bootstrap() []string { return strings.Split(c.Fields["bootstrap"], ",") }

// docker runs a docker command for a fault on node name.
func (c *Cluster) docker(ctx context.Context, what, name string, args func(Node) []string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	a := args(n)
	c.logf("dockercluster: %s %s (docker %s)", what, name, strings.Join(a, " "))
	if out, err := run(ctx, "docker", a...); err != nil {
		return fmt.Errorf("%w: %s %s: docker %s: %v: %s", ErrDocker, what, name, strings.Join(a, " "), err, strings.TrimSpace(out))
	}
	return nil
}

// Kill stops node name at once, as a host that loses power: every process in it dies (docker
// kill). [Cluster.Restart] boots it again.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	return c.docker(ctx, "kill", name, func(n Node) []string { return []string{"kill", n.Container} })
}

// Restart starts a killed node again, or reboots a running one, with its address and disk.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	return c.docker(ctx, "restart", name, func(n Node) []string { return []string{"restart", "-t", "5", n.Container} })
}

// Pause freezes every process of node name (docker pause): a hung host, whose connections stay
// open and silent.
func (c *Cluster) Pause(ctx context.Context, name string) error {
	return c.docker(ctx, "pause", name, func(n Node) []string { return []string{"pause", n.Container} })
}

// Unpause thaws a paused node.
func (c *Cluster) Unpause(ctx context.Context, name string) error {
	return c.docker(ctx, "unpause", name, func(n Node) []string { return []string{"unpause", n.Container} })
}

// Disconnect cuts node name off the cluster network (and so from every other node and the
// Docker host); its processes keep running. [Cluster.Connect] heals the partition.
func (c *Cluster) Disconnect(ctx context.Context, name string) error {
	return c.docker(ctx, "disconnect", name, func(n Node) []string {
		return []string{"network", "disconnect", c.Network, n.Container}
	})
}

// Connect puts a disconnected node back on the network at its address, under its host name.
func (c *Cluster) Connect(ctx context.Context, name string) error {
	return c.docker(ctx, "connect", name, func(n Node) []string {
		return []string{"network", "connect", "--ip", n.IP, "--alias", n.Name, c.Network, n.Container}
	})
}

// Exec runs a command in node name's container and returns its combined output.
func (c *Cluster) Exec(ctx context.Context, name string, args ...string) (string, error) {
	n, err := c.Node(name)
	if err != nil {
		return "", err
	}
	out, err := run(ctx, "docker", append([]string{"exec", n.Container}, args...)...)
	if err != nil {
		return out, fmt.Errorf("%w: exec in %s: %s: %v: %s", ErrDocker, name, strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	return out, nil
}

// Running reports whether node name's container runs (and is not paused).
func (c *Cluster) Running(ctx context.Context, name string) (bool, error) {
	n, err := c.Node(name)
	if err != nil {
		return false, err
	}
	out, err := run(ctx, "docker", "inspect", "-f", "{{.State.Status}}", n.Container)
	if err != nil {
		return false, fmt.Errorf("%w: inspect %s: %v: %s", ErrDocker, name, err, strings.TrimSpace(out))
	}
	return strings.TrimSpace(out) == "running", nil
}

// Logs returns the last lines of node name's container output (its daemons' logs).
func (c *Cluster) Logs(ctx context.Context, name string, lines int) string {
	n, err := c.Node(name)
	if err != nil {
		return err.Error()
	}
	out, _ := run(ctx, "docker", "logs", "--tail", fmt.Sprint(lines), n.Container)
	return out
}
