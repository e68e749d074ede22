package taskmanager

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// Hardware describes a TaskManager's machine, as GET /taskmanagers shows
// it (Flink's HardwareDescription).
type Hardware struct {
	// CPUCores is the number of CPUs the process may use.
	CPUCores int
	// PhysicalMemoryBytes is the machine's memory; 0 when unknown.
	PhysicalMemoryBytes int64
	// FreeMemoryBytes is the memory available for new processes now
	// (Linux's MemAvailable); 0 when unknown. Flink reports its JVM's heap
	// size here; a Go process has no fixed heap, and what a TaskManager's
	// workers can still take is the machine's available memory.
	FreeMemoryBytes int64
	// ManagedMemoryBytes is the memory managed for tasks outside the
	// processes' heaps (Flink's managed memory): Sluice manages none, 0.
	ManagedMemoryBytes int64
}

// Proto is h's wire form.
func (h Hardware) Proto() *clusterpb.Hardware {
	return &clusterpb.Hardware{CpuCores: int32(h.CPUCores), PhysicalMemoryBytes: h.PhysicalMemoryBytes,
		FreeMemoryBytes: h.FreeMemoryBytes, ManagedMemoryBytes: h.ManagedMemoryBytes}
}

// HostHardware describes this machine: runtime.NumCPU and, on Linux,
// /proc/meminfo (elsewhere the memory is unknown, 0).
func HostHardware() Hardware {
	h := Hardware{CPUCores: runtime.NumCPU()}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return h
	}
	defer f.Close()
	if total, avail, err := parseMeminfo(f); err == nil {
		h.PhysicalMemoryBytes, h.FreeMemoryBytes = total, avail
	}
	return h
}

// parseMeminfo reads MemTotal and MemAvailable, in bytes, from the text of
// Linux's /proc/meminfo ("MemTotal:       16318480 kB"). A kernel older
// than 3.14 has no MemAvailable: MemFree is taken then.
func parseMeminfo(r io.Reader) (total, available int64, err error) {
	var free int64
	haveTotal, haveAvail, haveFree := false, false, false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "MemTotal":
			dst, haveTotal = &total, true
		case "MemAvailable":
			dst, haveAvail = &available, true
		case "MemFree":
			dst, haveFree = &free, true
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 || (len(f) == 2 && f[1] != "kB") {
			return 0, 0, fmt.Errorf("taskmanager: /proc/meminfo: unreadable %s line %q", name, sc.Text())
		}
		n, perr := strconv.ParseInt(f[0], 10, 64)
		if perr != nil || n < 0 {
			return 0, 0, fmt.Errorf("taskmanager: /proc/meminfo: unreadable %s line %q", name, sc.Text())
		}
		if len(f) == 2 {
			n *= 1024
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("taskmanager: /proc/meminfo: %w", err)
	}
	if !haveTotal {
		return 0, 0, fmt.Errorf("taskmanager: /proc/meminfo has no MemTotal")
	}
	if !haveAvail && haveFree {
		available = free
	}
	return total, available, nil
}
