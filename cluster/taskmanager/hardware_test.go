package taskmanager

import (
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	for _, tc := range []struct {
		name             string
		in               string
		total, available int64
		err              bool
	}{
		{"linux", "MemTotal:       16318480 kB\nMemFree:         1209876 kB\nMemAvailable:    9876543 kB\nBuffers:          123456 kB\nHugePages_Total:       0\n",
			16318480 << 10, 9876543 << 10, false},
		{"no MemAvailable (before 3.14)", "MemTotal: 2048 kB\nMemFree: 1024 kB\n", 2 << 20, 1 << 20, false},
		{"neither MemAvailable nor MemFree", "MemTotal: 2048 kB\n", 2 << 20, 0, false},
		{"no MemTotal", "MemFree: 1024 kB\n", 0, 0, true},
		{"a value that is not a number", "MemTotal: lots kB\n", 0, 0, true},
		{"another unit", "MemTotal: 2 MB\n", 0, 0, true},
		{"empty", "", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total, avail, err := parseMeminfo(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want an error: %v", err, tc.err)
			}
			if total != tc.total || avail != tc.available {
				t.Errorf("total %d, available %d; want %d, %d", total, avail, tc.total, tc.available)
			}
		})
	}
}

func TestHostHardware(t *testing.T) {
	h := HostHardware()
	if h.CPUCores < 1 {
		t.Errorf("CPUCores %d", h.CPUCores)
	}
	if h.PhysicalMemoryBytes < 0 || h.FreeMemoryBytes < 0 || h.FreeMemoryBytes > h.PhysicalMemoryBytes || h.ManagedMemoryBytes != 0 {
		t.Errorf("memory %+v", h)
	}
}
