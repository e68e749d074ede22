package conf

import (
	"errors"
	"slices"
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
