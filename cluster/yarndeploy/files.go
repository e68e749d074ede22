package yarndeploy

import (
	"bytes"
	"encoding/xml"
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
