package procstats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
)

// The containers of testdata/proc, a procfs tree of a node: pod A (systemd cgroup driver,
// cgroup v1) with its pause container and Gym's container (Gym's process is pid 1 there, one
// of its servers pid 7), a Docker container on cgroup v2, pod B (cgroupfs driver, cgroup v2)
// as seen from another cgroup namespace, host pids 1 and 7, and a process whose status is
// broken.
const (
	gymContainer   = "0b1f2e3d4c5b6a79887766554433221100ffeeddccbbaa998877665544332211"
	pauseContainer = "aa11bb22cc33dd44ee55ff6600778899aabbccddeeff00112233445566778899"
	dockerID       = "d0c4e2f1a3b5c7d9e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
	podA           = "3f2a9c1e-7b4d-4e8a-9c61-2d5f8e0b1a47"
	podB           = "8c5e1d2f-0a3b-4c6d-8e9f-1a2b3c4d5e6f"
)

func TestPlacementFromProcTree(t *testing.T) {
	src := procstats.NewHostSourceAt("testdata/proc")
	ctx := context.Background()
	pids, err := src.Pids(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []int32{1, 7, 5001, 5002, 5003, 6001, 7001, 9000}, pids)

	pl, err := src.Placement(ctx, 5003)
	require.NoError(t, err)
	assert.Equal(t, []int32{5003, 7}, pl.NSpid)
	require.Len(t, pl.Cgroups, 4)
	assert.Equal(t, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f2a9c1e_7b4d_4e8a_9c61_2d5f8e0b1a47.slice/cri-containerd-"+gymContainer+".scope", pl.Cgroups[0])
	assert.Equal(t, "/", pl.Cgroups[3])
	assert.True(t, procstats.Container{ID: gymContainer}.Matches(pl, 7))
	assert.True(t, procstats.Container{PodUID: podA}.Matches(pl, 7), "the systemd driver's pod uid, with underscores")
	assert.True(t, procstats.Container{ID: gymContainer[:12], PodUID: podA}.Matches(pl, 7), "a short id")
	assert.False(t, procstats.Container{ID: gymContainer}.Matches(pl, 5003), "the host pid is not the container's")
	assert.False(t, procstats.Container{ID: pauseContainer}.Matches(pl, 7))
	assert.False(t, procstats.Container{ID: gymContainer, PodUID: podB}.Matches(pl, 7), "both must match")

	pl, err = src.Placement(ctx, 7001)
	require.NoError(t, err)
	assert.Equal(t, []int32{7001, 42}, pl.NSpid)
	assert.True(t, procstats.Container{PodUID: podB}.Matches(pl, 42), "cgroupfs driver, path outside the reader's cgroup namespace")

	pl, err = src.Placement(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, procstats.Placement{Cgroups: []string{"/init.scope"}, NSpid: []int32{1}}, pl)

	_, err = src.Placement(ctx, 9000)
	assert.ErrorContains(t, err, `pid 9000: NSpid "x": not a list of pids`)
	_, err = src.Placement(ctx, 12345)
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(err), "%v", err)
}

// treeSource lists and places processes from testdata/proc and reads them from a fake.
type treeSource struct {
	procstats.Source // the tree
	fake             *procstatstest.Source
	pidsCalls        int
}

func (s *treeSource) Pids(ctx context.Context) ([]int32, error) {
	s.pidsCalls++
	return s.Source.Pids(ctx)
}

func (s *treeSource) Open(pid int32) (procstats.Process, error) { return s.fake.Open(pid) }

func TestScrapeFindsProcessesInContainers(t *testing.T) {
	fake := procstatstest.NewSource("node-1")
	for pid, rss := range map[int32]int64{7: 70, 5001: 1, 5002: 5002, 5003: 5003, 6001: 6001, 7001: 7001} {
		p := python(1000 + int64(pid))
		p.RSS = rss
		fake.Set(pid, p)
	}
	src := &treeSource{Source: procstats.NewHostSourceAt("testdata/proc"), fake: fake}
	s := newScraper(t, src, procstats.Options{})
	targets := []procstats.Target{
		{PID: 1, Key: "gym", In: procstats.Container{ID: gymContainer}},
		{PID: 7, Key: "server", In: procstats.Container{PodUID: podA}}, // unique in the pod
		{PID: 1, Key: "docker", In: procstats.Container{ID: dockerID[:12]}},
		{PID: 42, Key: "pod-b", In: procstats.Container{PodUID: podB}},
		{PID: 7, Key: "host"}, // the host's pid 7
		{PID: 1, Key: "ambiguous", In: procstats.Container{PodUID: podA}}, // pause and Gym
		{PID: 1, Key: "elsewhere", In: procstats.Container{ID: strings.Repeat("ab", 32)}},
		{PID: 1, Key: "bad", In: procstats.Container{ID: "../../init.scope"}},
	}
	res := scrape(t, s, targets...)
	got := map[string][2]int64{} // key: announced pid, RSS (the host process read)
	for _, r := range res.Readings {
		got[r.Key] = [2]int64{int64(r.PID), r.RSS}
		if r.Key == "host" {
			assert.Zero(t, r.HostPID)
			assert.True(t, r.In.IsZero())
		} else {
			assert.Equal(t, int32(r.RSS), r.HostPID, "%s", r.Key)
			assert.False(t, r.In.IsZero())
		}
	}
	assert.Equal(t, map[string][2]int64{"gym": {1, 5002}, "server": {7, 5003}, "docker": {1, 6001}, "pod-b": {42, 7001}, "host": {7, 70}}, got)
	assert.Equal(t, procstats.Counts{NotFound: 1, Other: 2}, res.Counts)
	assert.ElementsMatch(t, []string{
		"pid 1 in pod " + podA + ": 2 processes on this host match (host pids [5001 5002]): announce container.id, or share one pid namespace in the pod",
		"pid 1 in container " + strings.Repeat("ab", 32) + ": no such process on this host",
		`pid 1 in container ../../init.scope: container.id "../../init.scope" is not a container id (12 to 64 hex digits)`,
	}, errorStrings(res))
	assert.Equal(t, 1, src.pidsCalls)

	// The processes found are checked, not searched for again.
	res = scrape(t, s, targets[:5]...)
	assert.Len(t, res.Readings, 5)
	assert.Empty(t, res.Errors)
	assert.Equal(t, 1, src.pidsCalls, "no listing when every process found before is still there")
	for _, r := range res.Readings {
		assert.False(t, r.New, "%s: the same process", r.Key)
	}
}

// A container's process that restarts gets another host pid and the same pid in the container.
func TestContainerProcessRestarts(t *testing.T) {
	const id = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
	cg := []string{"/kubepods/besteffort/pod" + podA + "/" + id}
	src := procstatstest.NewSource("node-1")
	p := python(1000)
	p.Cgroups, p.NSpid = cg, []int32{300, 1}
	src.Set(300, p)
	s := newScraper(t, src, procstats.Options{})
	target := procstats.Target{PID: 1, Key: "gym", In: procstats.Container{ID: id}}
	res := scrape(t, s, target)
	require.Len(t, res.Readings, 1)
	first := res.Readings[0]
	assert.Equal(t, int32(300), first.HostPID)

	src.Remove(300)
	p = python(2000)
	p.Cgroups, p.NSpid = cg, []int32{400, 1}
	src.Set(400, p)
	res = scrape(t, s, target)
	require.Len(t, res.Readings, 1)
	r := res.Readings[0]
	assert.Equal(t, int32(1), r.PID)
	assert.Equal(t, int32(400), r.HostPID)
	assert.True(t, r.New)
	assert.Equal(t, int64(2000), r.CreateTime)
	assert.Equal(t, []procstats.Reading{first}, res.Ended, "the process before ended")

	// Gone: counted as not found, and the last one reported ended.
	src.Remove(400)
	res = scrape(t, s, target)
	assert.Empty(t, res.Readings)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	assert.Equal(t, []string{"pid 1 in container " + id + ": no such process on this host"}, errorStrings(res))
	require.Len(t, res.Ended, 1)
	assert.Equal(t, int32(400), res.Ended[0].HostPID)
}

func TestContainerValidate(t *testing.T) {
	assert.NoError(t, procstats.Container{ID: gymContainer, PodUID: podA}.Validate())
	assert.NoError(t, procstats.Container{ID: gymContainer[:12]}.Validate())
	assert.Error(t, procstats.Container{ID: gymContainer[:11]}.Validate())
	assert.Error(t, procstats.Container{ID: "docker-" + gymContainer[:20]}.Validate())
	assert.Error(t, procstats.Container{PodUID: strings.ReplaceAll(podA, "-", "_")}.Validate())
	assert.Error(t, procstats.Container{PodUID: "pod"}.Validate())
}
