// Package harness runs collectors (otelcol-gym and the stock peers) on loopback for the
// end-to-end benchmarks, the peer comparisons and the soak: it starts a process on a generated
// configuration, reads its CPU time, memory and file descriptors from /proc, its goroutines
// and heap from the pprof extension, its own metrics from its telemetry endpoint, and receives
// its OTLP/HTTP exports in a sink that counts and discards them. For the OTLP peer comparison
// it also generates Gym SDK OTLP exports and the OTTL closest to gymattrs from internal/schema
// (otlpgen.go, ottl.go) and posts the exports (otlppost.go).
package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports (the kernel exports a fixed USER_HZ whatever its internal HZ).
const clockTicks = 100

// ProcCPU returns the CPU time (user + system, all threads, children excluded) that process
// pid has used, from /proc/<pid>/stat (resolution 10 ms).
func ProcCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything: split after it.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/pid/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/pid/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// Mem is a process's memory from /proc/<pid>/status.
type Mem struct {
	RSS, HWM int64 // resident set size now and at its peak, bytes
	Threads  int
}

// ProcMem reads VmRSS, VmHWM and Threads of process pid.
func ProcMem(pid int) (Mem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	defer f.Close()
	var m Mem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.HWM = n << 10
		case "Threads":
			m.Threads = int(n)
		}
	}
	return m, sc.Err()
}

// ProcFDs counts the open file descriptors of process pid.
func ProcFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// MachineInfo describes the machine for a report: processors, CPU model, memory.
func MachineInfo() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				if f := strings.Fields(l); len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					mem = fmt.Sprintf(", %.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	load := ""
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			load = fmt.Sprintf(", load average %s %s %s", f[0], f[1], f[2])
		}
	}
	return fmt.Sprintf("%s%s%s", model, mem, load)
}

// ProcListeners are the TCP addresses process pid listens on (host:port, IPv6 in brackets),
// from /proc/<pid>/net/tcp and tcp6: the listening sockets whose inodes are among its file
// descriptors.
func ProcListeners(pid int) ([]string, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, file := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addr, err := procAddr(f[1])
			if err != nil {
				return nil, err
			}
			out = append(out, addr)
		}
	}
	return out, nil
}

// procAddr decodes an address of /proc/net/tcp{,6}: the IP in hex, in 32-bit words of host
// (little-endian) order, a colon, the port in hex.
func procAddr(s string) (string, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || (len(hexIP) != 8 && len(hexIP) != 32) {
		return "", fmt.Errorf("unexpected address %q", s)
	}
	ip := make(net.IP, len(hexIP)/2)
	for w := 0; w < len(ip); w += 4 {
		v, err := strconv.ParseUint(hexIP[2*w:2*w+8], 16, 32)
		if err != nil {
			return "", fmt.Errorf("unexpected address %q", s)
		}
		ip[w], ip[w+1], ip[w+2], ip[w+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
}
