package procstats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Container names the container whose pid namespace an announced pid is numbered in, by the
// resource attributes of the OpenTelemetry conventions: container.id, k8s.pod.uid. A Gym process
// in a container announces its own pid (os.getpid() inside the container) and the container's
// hostname, neither of which the host knows; the host finds the process by the container's
// cgroup, which /proc/<pid>/cgroup of every process in it names (the container id, the pod
// uid), and by its pid in its innermost pid namespace (/proc/<pid>/status, NSpid).
//
// The zero Container is the host: the pid is the host's.
type Container struct {
	// ID is container.id: the runtime's id (64 hex digits, or a prefix of at least 12).
	ID string
	// PodUID is k8s.pod.uid. Every container of a pod has its cgroup under the pod's; when
	// only the pod is named, a pid must be unique among the pod's pid namespaces (one
	// container, or shareProcessNamespace), else the match is ambiguous and nothing is read.
	PodUID string
}

// IsZero reports whether c is the host.
func (c Container) IsZero() bool { return c.ID == "" && c.PodUID == "" }

func (c Container) String() string {
	switch {
	case c.ID != "" && c.PodUID != "":
		return "container " + c.ID + " of pod " + c.PodUID
	case c.ID != "":
		return "container " + c.ID
	case c.PodUID != "":
		return "pod " + c.PodUID
	}
	return "host"
}

// Validate checks that the names can only match a cgroup path component of a container: a
// container id is 12 to 64 hex digits, a pod uid is a UUID. Anything else (a path, a glob, an
// empty-looking id) could match unrelated processes.
func (c Container) Validate() error {
	if c.ID != "" && !isContainerID(c.ID) {
		return fmt.Errorf("container.id %q is not a container id (12 to 64 hex digits)", c.ID)
	}
	if c.PodUID != "" && !isUUID(c.PodUID) {
		return fmt.Errorf("k8s.pod.uid %q is not a pod uid (a UUID)", c.PodUID)
	}
	return nil
}

func isContainerID(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// Placement is where a host process runs: its cgroups and its pid in each pid namespace.
type Placement struct {
	// Cgroups holds the path of each line of /proc/<pid>/cgroup (one per hierarchy on cgroup
	// v1, one on v2), as the reader's cgroup namespace shows it: outside it, a path starts
	// with /.. but still names the container's cgroups.
	Cgroups []string
	// NSpid is the pid in each pid namespace the process is in, the reader's first and its own
	// last (/proc/<pid>/status; kernels before 4.1 lack the line: then the reader's pid alone).
	NSpid []int32
}

// Matches reports whether the process placed at pl is the one that c numbers pid.
func (c Container) Matches(pl Placement, pid int32) bool {
	if c.IsZero() || len(pl.NSpid) == 0 || pl.NSpid[len(pl.NSpid)-1] != pid {
		return false
	}
	id, pod := c.ID == "", c.PodUID == ""
	// The systemd cgroup driver spells a pod uid with underscores (kubepods-pod<uid>.slice).
	podUnderscored := strings.ReplaceAll(c.PodUID, "-", "_")
	for _, cg := range pl.Cgroups {
		id = id || strings.Contains(cg, c.ID)
		pod = pod || strings.Contains(cg, c.PodUID) || strings.Contains(cg, podUnderscored)
	}
	return id && pod
}

// readPlacement reads the placement of pid from a procfs mounted at root.
func readPlacement(root string, pid int32) (Placement, error) {
	dir := filepath.Join(root, strconv.FormatInt(int64(pid), 10))
	cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		return Placement{}, err
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Placement{}, err
	}
	return parsePlacement(pid, cg, status)
}

// parsePlacement parses /proc/<pid>/cgroup (hierarchy-ID:controllers:path lines) and the NSpid
// line of /proc/<pid>/status.
func parsePlacement(pid int32, cgroup, status []byte) (Placement, error) {
	var pl Placement
	sc := bufio.NewScanner(bytes.NewReader(cgroup))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		// The path is everything after the second colon: it may contain colons itself.
		_, rest, ok1 := strings.Cut(line, ":")
		_, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return Placement{}, fmt.Errorf("pid %d: cgroup line %q is not hierarchy:controllers:path", pid, line)
		}
		pl.Cgroups = append(pl.Cgroups, path)
	}
	if err := sc.Err(); err != nil {
		return Placement{}, err
	}
	sc = bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		val, ok := strings.CutPrefix(sc.Text(), "NSpid:")
		if !ok {
			continue
		}
		for f := range strings.FieldsSeq(val) {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil || n <= 0 {
				return Placement{}, fmt.Errorf("pid %d: NSpid %q: not a list of pids", pid, strings.TrimSpace(val))
			}
			pl.NSpid = append(pl.NSpid, int32(n))
		}
		break
	}
	if err := sc.Err(); err != nil {
		return Placement{}, err
	}
	if len(pl.NSpid) == 0 {
		pl.NSpid = []int32{pid} // no pid namespaces (kernels before 4.1)
	} else if pl.NSpid[0] != pid {
		return Placement{}, fmt.Errorf("pid %d: NSpid %v does not start with the pid", pid, pl.NSpid)
	}
	return pl, nil
}
