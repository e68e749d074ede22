package conf

import "testing"

// TestYarnDeploymentKeys pins the YARN keys the deployment reads, with
// Flink's names and defaults.
func TestYarnDeploymentKeys(t *testing.T) {
	for key, def := range map[string]string{
		"yarn.application-attempt-failures-validity-interval": "10000",
		"yarn.application.node-label":                         "(none)",
		"yarn.taskmanager.node-label":                         "(none): yarn.application.node-label",
		"yarn.heartbeat.interval":                             "5",
		"yarn.heartbeat.container-request-interval":           "500 ms",
		"taskmanager.resource-id":                             "(none): generated from the TaskManager's address and a random suffix",
	} {
		o, ok := Find(key)
		if !ok {
			t.Errorf("catalog lacks %q", key)
			continue
		}
		if got := o.DefaultString(); got != def {
			t.Errorf("%s default = %q, want %q", key, got, def)
		}
	}
	c := FromMap(map[string]string{"yarn.application-attempt-failures-validity-interval": "-2"}, Source{Name: "test"})
	if _, err := c.Validate(); err == nil {
		t.Error("a validity interval of -2 passed validation")
	}
}
