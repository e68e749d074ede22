package conf

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPorts(t *testing.T) {
	tests := []struct {
		spec    string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"6121", []int{6121}, false},
		{"50100-50103", []int{50100, 50101, 50102, 50103}, false},
		{"50100-50101, 6000 ,7000-7000", []int{50100, 50101, 6000, 7000}, false},
		{"", nil, true},
		{"70000", nil, true},
		{"50103-50100", nil, true},
		{"a-b", nil, true},
		{"1,", nil, true},
	}
	for _, tt := range tests {
		got, err := Ports(tt.spec)
		if tt.wantErr {
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Errorf("Ports(%q) = %v, %v; want a *ValueError", tt.spec, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Ports(%q) = %v, %v; want %v", tt.spec, got, err, tt.want)
		}
	}
}

func TestResourceOptions(t *testing.T) {
	for key, want := range map[string]string{
		"cluster.evenly-spread-out-slots":     "false",
		"resourcemanager.taskmanager-timeout": "30 s",
		"taskmanager.cpu.cores":               "(none): taskmanager.numberOfTaskSlots",
	} {
		o, ok := Find(key)
		if !ok {
			t.Errorf("no option %q", key)
			continue
		}
		if got := o.DefaultString(); got != want {
			t.Errorf("%s default = %q, want %q", key, got, want)
		}
	}
	if _, err := FromDynamicProperties([]string{"taskmanager.cpu.cores=0"}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("taskmanager.cpu.cores=0 validated: %v", err)
	}
	c := FromDynamicProperties([]string{"taskmanager.cpu.cores=1.5", "taskmanager.host=127.0.0.1"})
	if _, err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := Get(c, TaskManagerCPUCores); got != 1.5 {
		t.Errorf("taskmanager.cpu.cores = %v", got)
	}
	if got := Get(c, TaskManagerHost); got != "127.0.0.1" {
		t.Errorf("taskmanager.host = %q", got)
	}
}

// taskmanager.data.port takes Flink's port specifications, from -D and from
// config.yaml (where a single port is a YAML number); a bad one is a
// problem naming the key and the bad value.
func TestTaskManagerDataPort(t *testing.T) {
	tests := []struct {
		value   string
		want    []int
		problem string // a substring of the problem, when invalid
	}{
		{"0", []int{0}, ""},
		{"50100", []int{50100}, ""},
		{"50100-50102", []int{50100, 50101, 50102}, ""},
		{"50100,50105-50107", []int{50100, 50105, 50106, 50107}, ""},
		{" 50100 , 50101 ", []int{50100, 50101}, ""},
		{"abc", nil, `taskmanager.data.port: invalid value "abc": "abc" is not a port (0-65535) or a range such as 50100-50200`},
		{"70000", nil, `taskmanager.data.port: invalid value "70000": "70000" is not a port`},
		{"-1", nil, `taskmanager.data.port: invalid value "-1": "-1" is not a port`},
		{"50200-50100", nil, `taskmanager.data.port: invalid value "50200-50100": "50200-50100" is not a port`},
		{"50100-", nil, `taskmanager.data.port: invalid value "50100-": "50100-" is not a port`},
		{"50100,abc", nil, `taskmanager.data.port: invalid value "50100,abc": "abc" is not a port`},
		{"50100,", nil, `taskmanager.data.port: invalid value "50100,": "" is not a port`},
		{"", nil, `taskmanager.data.port: invalid value "": "" is not a port`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c := FromDynamicProperties([]string{"taskmanager.data.port=" + tt.value})
			_, err := c.Validate()
			if tt.problem != "" {
				var ve *ValidationError
				if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Key != "taskmanager.data.port" ||
					ve.Problems[0].Value != tt.value || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("got %v, want one problem with %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Ports(Get(c, TaskManagerDataPort))
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Ports(%q) = %v, %v; want %v", Get(c, TaskManagerDataPort), got, err, tt.want)
			}
		})
	}
	t.Run("config.yaml", func(t *testing.T) {
		for text, want := range map[string]string{
			"taskmanager.data.port: 50100\n":                 "50100",
			"taskmanager:\n  data.port: 50100-50200,50300\n": "50100-50200,50300",
			"taskmanager.data.port: \"0\"\n":                 "0",
		} {
			c, err := ParseYAML("config.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := Get(c, TaskManagerDataPort); got != want {
				t.Errorf("%q: got %q, want %q", text, got, want)
			}
		}
	})
	if got := Get(New(), TaskManagerDataPort); got != "0" {
		t.Errorf("default %q, want 0", got)
	}
}
