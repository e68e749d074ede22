package minicluster

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadyFile is the name of the marker the harness writes into its conf dir once every server is
// up, and removes when it stops. It holds key=value lines (see [ParseReady]).
const ReadyFile = "READY"

// Keys of the READY file that [ParseReady] requires.
const (
	KeyRMAddress        = "rm_address"
	KeySchedulerAddress = "rm_scheduler_address"
	KeyWebAppAddress    = "rm_webapp_address"
	KeyNameNodeAddress  = "namenode_address"
	KeyNodeManagers     = "nm_addresses"
	KeyPID              = "pid"
	KeyWorkDir          = "work_dir"
)

// ErrBadConf reports a READY or *-site.xml file that cannot be used; the wrapping error names the
// file, the line or key, and what is wrong.
var ErrBadConf = errors.New("minicluster: bad cluster description")

// ConfError is a problem found in a READY or *-site.xml file.
type ConfError struct {
	Path   string // file read
	Line   int    // 1-based line, 0 when not tied to a line
	Key    string // key concerned, if any
	Reason string
}

func (e *ConfError) Error() string {
	var b strings.Builder
	b.WriteString("minicluster: ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrBadConf) hold.
func (e *ConfError) Unwrap() error { return ErrBadConf }

// ParseReady parses the contents of a READY file: one key=value per line; blank lines and lines
// starting with '#' are ignored. The address keys rm_address, rm_scheduler_address,
// rm_webapp_address and namenode_address must be present and be host:port with a port in
// 1..65535. path is used in errors only.
func ParseReady(path string, data []byte) (map[string]string, error) {
	fields := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, &ConfError{Path: path, Line: line, Reason: fmt.Sprintf("want key=value, got %q", text)}
		}
		if _, dup := fields[k]; dup {
			return nil, &ConfError{Path: path, Line: line, Key: k, Reason: "duplicate key"}
		}
		fields[k] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, &ConfError{Path: path, Line: line, Reason: err.Error()}
	}
	for _, k := range []string{KeyRMAddress, KeySchedulerAddress, KeyWebAppAddress, KeyNameNodeAddress} {
		v, ok := fields[k]
		if !ok {
			return nil, &ConfError{Path: path, Key: k, Reason: "missing"}
		}
		if err := checkHostPort(v); err != nil {
			return nil, &ConfError{Path: path, Key: k, Reason: err.Error()}
		}
	}
	if fields[KeySecure] == "true" {
		for _, k := range secureKeys {
			if fields[k] == "" {
				return nil, &ConfError{Path: path, Key: k, Reason: "missing (required with secure=true)"}
			}
		}
	}
	if v, ok := fields[KeyPID]; ok {
		if n, err := strconv.Atoi(v); err != nil || n <= 0 {
			return nil, &ConfError{Path: path, Key: KeyPID, Reason: fmt.Sprintf("want a positive integer, got %q", v)}
		}
	}
	return fields, nil
}

// checkHostPort accepts host:port with a non-empty host and a port in 1..65535.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", s)
	}
	if host == "" {
		return fmt.Errorf("empty host in %q", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port of %q is not in 1..65535", s)
	}
	return nil
}

// clusterFromReady fills a Cluster from a READY file's fields.
func clusterFromReady(confDir string, f map[string]string) *Cluster {
	c := &Cluster{
		ConfDir:         confDir,
		ResourceManager: f[KeyRMAddress],
		Scheduler:       f[KeySchedulerAddress],
		NameNode:        f[KeyNameNodeAddress],
		WebApp:          f[KeyWebAppAddress],
		Fields:          f,
	}
	if nms := f[KeyNodeManagers]; nms != "" {
		c.NodeManagers = strings.Split(nms, ",")
	}
	c.Kerberos = kerberosFromReady(f)
	return c
}

// siteProps reads the <property> name/value pairs of a Hadoop *-site.xml file. A missing file
// yields no properties.
func siteProps(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("minicluster: reading %s: %w", path, err)
	}
	var doc struct {
		Props []struct {
			Name  string `xml:"name"`
			Value string `xml:"value"`
		} `xml:"property"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, &ConfError{Path: path, Reason: "not a Hadoop configuration file: " + err.Error()}
	}
	props := make(map[string]string, len(doc.Props))
	for _, p := range doc.Props {
		name := strings.TrimSpace(p.Name)
		if name == "" {
			return nil, &ConfError{Path: path, Reason: "property without a name"}
		}
		props[name] = strings.TrimSpace(p.Value)
	}
	return props, nil
}

// maxExpansions bounds ${var} substitution, as Hadoop's Configuration does.
const maxExpansions = 20

// expand substitutes ${name} references from props; unknown names are an error.
func expand(props map[string]string, key, v string) (string, error) {
	for i := 0; i < maxExpansions; i++ {
		start := strings.Index(v, "${")
		if start < 0 {
			return v, nil
		}
		end := strings.Index(v[start:], "}")
		if end < 0 {
			return "", fmt.Errorf("%s: unterminated ${ in %q", key, v)
		}
		name := v[start+2 : start+end]
		sub, ok := props[name]
		if !ok {
			return "", fmt.Errorf("%s: %q refers to unset ${%s}", key, v, name)
		}
		v = v[:start] + sub + v[start+end+1:]
	}
	return "", fmt.Errorf("%s: more than %d substitutions in %q", key, maxExpansions, v)
}

// clusterFromSiteFiles describes an external cluster from the core-site.xml, hdfs-site.xml and
// yarn-site.xml in confDir, with Hadoop's default ports where an address is not set.
func clusterFromSiteFiles(confDir string) (*Cluster, error) {
	props := map[string]string{}
	found := false
	for _, name := range []string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml"} {
		p, err := siteProps(filepath.Join(confDir, name))
		if err != nil {
			return nil, err
		}
		if len(p) > 0 {
			found = true
		}
		for k, v := range p {
			props[k] = v
		}
	}
	if !found {
		return nil, &ConfError{Path: confDir, Reason: "neither READY nor core-site.xml/hdfs-site.xml/yarn-site.xml with properties"}
	}
	yarnSite := filepath.Join(confDir, "yarn-site.xml")
	rmHost := props["yarn.resourcemanager.hostname"]
	if rmHost == "" {
		rmHost = "localhost"
	}
	get := func(path, key, def string) (string, error) {
		v, ok := props[key]
		if !ok || v == "" {
			v = def
		}
		v, err := expand(props, key, v)
		if err != nil {
			return "", &ConfError{Path: path, Key: key, Reason: err.Error()}
		}
		if err := checkHostPort(v); err != nil {
			return "", &ConfError{Path: path, Key: key, Reason: err.Error()}
		}
		return v, nil
	}
	c := &Cluster{ConfDir: confDir, Fields: map[string]string{}}
	var err error
	if c.ResourceManager, err = get(yarnSite, "yarn.resourcemanager.address", rmHost+":8032"); err != nil {
		return nil, err
	}
	if c.Scheduler, err = get(yarnSite, "yarn.resourcemanager.scheduler.address", rmHost+":8030"); err != nil {
		return nil, err
	}
	if c.WebApp, err = get(yarnSite, "yarn.resourcemanager.webapp.address", rmHost+":8088"); err != nil {
		return nil, err
	}
	coreSite := filepath.Join(confDir, "core-site.xml")
	fsURI, err := expand(props, "fs.defaultFS", props["fs.defaultFS"])
	if err != nil {
		return nil, &ConfError{Path: coreSite, Key: "fs.defaultFS", Reason: err.Error()}
	}
	u, err := url.Parse(fsURI)
	if err != nil || u.Scheme != "hdfs" || u.Hostname() == "" {
		return nil, &ConfError{Path: coreSite, Key: "fs.defaultFS", Reason: fmt.Sprintf("want hdfs://host[:port], got %q", fsURI)}
	}
	if u.Port() == "" {
		if ns := props["dfs.nameservices"]; ns != "" {
			return nil, &ConfError{Path: coreSite, Key: "fs.defaultFS",
				Reason: fmt.Sprintf("%q names an HA nameservice (%s); give fs.defaultFS as hdfs://namenode-host:port", fsURI, ns)}
		}
		c.NameNode = net.JoinHostPort(u.Hostname(), "8020")
	} else {
		c.NameNode = u.Host
	}
	for k, v := range map[string]string{
		KeyRMAddress: c.ResourceManager, KeySchedulerAddress: c.Scheduler,
		KeyWebAppAddress: c.WebApp, KeyNameNodeAddress: c.NameNode, "fs_default_fs": fsURI,
	} {
		c.Fields[k] = v
	}
	return c, nil
}

// Load describes the cluster whose client configuration is in confDir: from its READY file when
// there is one (a harness conf dir; the harness must still be running if it is on this machine),
// otherwise from its *-site.xml files (any Hadoop cluster, such as a dockerized one).
func Load(confDir string) (*Cluster, error) {
	abs, err := filepath.Abs(confDir)
	if err != nil {
		return nil, fmt.Errorf("minicluster: conf dir %q: %w", confDir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, &ConfError{Path: abs, Reason: "not a directory"}
	}
	readyPath := filepath.Join(abs, ReadyFile)
	data, err := os.ReadFile(readyPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return clusterFromSiteFiles(abs)
	case err != nil:
		return nil, fmt.Errorf("minicluster: reading %s: %w", readyPath, err)
	}
	f, err := ParseReady(readyPath, data)
	if err != nil {
		return nil, err
	}
	if pid, ok := f[KeyPID]; ok {
		n, _ := strconv.Atoi(pid) // validated by ParseReady
		if !processAlive(n) {
			return nil, &ConfError{Path: readyPath, Key: KeyPID,
				Reason: fmt.Sprintf("harness process %d is not running (stale READY); restart it with integration/scripts/minicluster.sh start %s", n, abs)}
		}
	}
	return clusterFromReady(abs, f), nil
}
