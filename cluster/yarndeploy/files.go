package yarndeploy

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
)

// configYAML is the Sluice configuration as a flat config.yaml, which
// conf.ParseYAML reads back to the same settings.
func configYAML(c *conf.Configuration) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# The effective Sluice configuration of this application, written by the client.\n")
	m := c.ToMap()
	if len(m) == 0 {
		return b.Bytes(), nil
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: writing config.yaml: %w", err)
	}
	b.Write(out)
	return b.Bytes(), nil
}

type xmlConf struct {
	XMLName    xml.Name  `xml:"configuration"`
	Properties []xmlProp `xml:"property"`
}

type xmlProp struct {
	Name  string `xml:"name"`
	Value string `xml:"value"`
	Final bool   `xml:"final,omitempty"`
}

// hadoopXML is the Hadoop configuration as one site file, values as
// written (${...} references are expanded where it is read).
func hadoopXML(h *hadoop.Configuration) ([]byte, error) {
	var doc xmlConf
	for _, k := range h.Keys() {
		v, _ := h.Raw(k)
		doc.Properties = append(doc.Properties, xmlProp{Name: k, Value: v, Final: h.IsFinal(k)})
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: writing the Hadoop configuration: %w", err)
	}
	return append([]byte(xml.Header+"<!-- The Hadoop configuration of the Sluice client that submitted this application. -->\n"), append(out, '\n')...), nil
}

// withOverrides copies h and applies Flink's pass-through keys:
// flink.hadoop.<key> sets <key>, flink.yarn.<key> sets yarn.<key>.
// ErrNoResourceManager is the error of a client whose Hadoop configuration
// does not say where the ResourceManager is: Hadoop's built-in default,
// 0.0.0.0:8032, is only ever right on the ResourceManager's own host, and
// the client would retry against it for minutes.
var ErrNoResourceManager = errors.New("no Hadoop configuration names the YARN ResourceManager: HADOOP_CONF_DIR is unset or its yarn-site.xml has no " +
	hadoop.KeyRMAddress + " (nor yarn.resourcemanager.hostname); set HADOOP_CONF_DIR to the directory of the cluster's core-site.xml and yarn-site.xml")

// CheckResourceManager returns ErrNoResourceManager unless the
// ResourceManager's address comes from a site file, a programmatic setting
// or a flink.yarn.* / flink.hadoop.* key of c, rather than Hadoop's
// built-in default. A client checks it before it deploys.
func CheckResourceManager(h *hadoop.Configuration, c *conf.Configuration) error {
	if resourceManagerConfigured(h, c) {
		return nil
	}
	return ErrNoResourceManager
}

func resourceManagerConfigured(h *hadoop.Configuration, c *conf.Configuration) bool {
	over := c.Subset("flink.hadoop.")
	for k, v := range c.Subset("flink.yarn.") {
		over["yarn."+k] = v
	}
	for _, k := range []string{hadoop.KeyRMAddress, "yarn.resourcemanager.hostname", "yarn.resourcemanager.ha.enabled"} {
		if _, ok := over[k]; ok {
			return true
		}
		if src := h.Source(k); src != "" && src != hadoop.SourceDefaults {
			return true
		}
	}
	return false
}

func withOverrides(h *hadoop.Configuration, c *conf.Configuration, getenv func(string) string) *hadoop.Configuration {
	out := hadoop.NewConfiguration(getenv)
	for _, k := range h.Keys() {
		v, _ := h.Raw(k)
		out.Set(k, v)
	}
	for k, v := range c.Subset("flink.hadoop.") {
		out.Set(k, v)
	}
	for k, v := range c.Subset("flink.yarn.") {
		out.Set("yarn."+k, v)
	}
	return out
}
