package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// simSetup is a comparison of two runs of pass/fail benchmarks: each task has its pass
// probability, uniform in [0.2, 0.8], and each rollout passes with it. In B, each task's
// probability moves by ±move (zero mean: tasks differ in how they move, the model does not), and
// benchmark 0's tasks lose drop (a real regression).
type simSetup struct {
	name                     string
	benches, tasks, rollouts int
	move, drop               float64
}

// simRuns generates the runs A and B of the setup, one reward at a time, into emit.
func simRuns(rng *rand.Rand, su simSetup, emit func(side, bench, task, rollout int, reward float64)) {
	pass := func(p float64) float64 {
		if rng.Float64() < p {
			return 1
		}
		return 0
	}
	for b := range su.benches {
		for task := range su.tasks {
			p := 0.2 + 0.6*rng.Float64()
			pb := p + su.move
			if rng.IntN(2) == 0 {
				pb = p - su.move
			}
			if b == 0 {
				pb -= su.drop
			}
			for i := range su.rollouts {
				emit(0, b, task, i, pass(p))
				emit(1, b, task, i, pass(pb))
			}
		}
	}
}

func simBench(b int) string { return fmt.Sprintf("bench%02d", b) }

// simSides generates runs as compare reads a run's files: each reward is the event the files'
// reader gives Summary.Apply, and the sides are built by runSide.
func simSides(t *testing.T, rng *rand.Rand, su simSetup) (*side, *side) {
	t.Helper()
	names := make([][]byte, su.benches)
	for b := range names {
		names[b] = []byte(simBench(b))
	}
	sums := [2]*Summary{NewSummary(), NewSummary()}
	ev := events.Event{Type: events.EventRolloutCompleted, Outcome: []byte(schema.ScoredOutcome), HasReward: true, HasTaskIndex: true, HasRolloutIndex: true}
	simRuns(rng, su, func(side, bench, task, rollout int, reward float64) {
		ev.DispatchName, ev.TaskIndex, ev.RolloutIndex, ev.Reward = names[bench], int64(task), int64(rollout), reward
		sums[side].Apply(&ev)
	})
	a, err := runSide("a", sums[0], nil)
	require.NoError(t, err)
	b, err := runSide("b", sums[1], nil)
	require.NoError(t, err)
	return a, b
}

// TestSimulatedRunsAreReadRuns: the simulation's in-memory path gives the report that compare
// gives on the same runs written as files and read by the command.
func TestSimulatedRunsAreReadRuns(t *testing.T) {
	su := simSetup{benches: 3, tasks: 20, rollouts: 3, move: 0.15, drop: 0.3}
	var rows [2][]string
	simRuns(rand.New(rand.NewPCG(7, 8)), su, func(side, bench, task, rollout int, reward float64) {
		rows[side] = append(rows[side], fmt.Sprintf(`{"_ng_environment_server":%q,"reward":%v,"_ng_task_index":%d,"_ng_rollout_index":%d}`,
			simBench(bench), reward, task, rollout))
	})
	pa, pb := writeRun(t, rows[0], nil), writeRun(t, rows[1], nil)
	code, fromFiles, stderr := compareRun(t, pa, pb)
	require.Empty(t, stderr)
	a, b := simSides(t, rand.New(rand.NewPCG(7, 8)), su)
	inMemory := compareSides(a, b, compareOpts{correctionHolm, 0.05})
	inMemory.A, inMemory.B = pa, pb
	data, err := json.Marshal(inMemory)
	require.NoError(t, err)
	var want CompareReport
	require.NoError(t, json.Unmarshal(data, &want))
	assert.Equal(t, want, fromFiles)
	assert.Equal(t, gate(inMemory), code)
	assert.Equal(t, testPaired, fromFiles.Benchmarks["bench00"].Test)
}

// TestCompareFalseAlarmsAndPower: runs of one model twice, 40 trials of each setup (seeded): at
// most 7% of the benchmarks' verdicts other than no_change, and at most 10% of the gates failed
// (exit status 1); a real drop of 0.15 in one benchmark of 20 is found (a regression, and the
// gate fails) in at least 80% of the trials. Uncorrected, the same runs fail the gate far more
// often: the correction is what holds it.
func TestCompareFalseAlarmsAndPower(t *testing.T) {
	const trials = 40
	rng := rand.New(rand.NewPCG(46, 2026))
	holmOpts, noneOpts := compareOpts{correctionHolm, 0.05}, compareOpts{correctionNone, 0.05}
	for _, su := range []simSetup{
		{name: "20x100x4", benches: 20, tasks: 100, rollouts: 4},
		{name: "20x100x16 moving", benches: 20, tasks: 100, rollouts: 16, move: 0.15},
		{name: "5x100x1", benches: 5, tasks: 100, rollouts: 1},
	} {
		var flagged, benches, gates, gatesNone, gatesUnpaired int
		for range trials {
			a, b := simSides(t, rng, su)
			r := compareSides(a, b, holmOpts)
			for name, c := range r.Benchmarks {
				require.Equal(t, testPaired, c.Test, name)
				require.Equal(t, int64(su.tasks), c.Pairs, name)
				benches++
				if c.Verdict != verdictNoChange {
					flagged++
				}
			}
			gates += gate(r)
			gatesNone += gate(compareSides(a, b, noneOpts))
			// As from the runs' summaries: no pairing, each mean clustered by task.
			u := compareSides(&side{path: "a", benches: a.benches}, &side{path: "b", benches: b.benches}, holmOpts)
			require.Equal(t, testClustered, u.Benchmarks[simBench(0)].Test)
			gatesUnpaired += gate(u)
		}
		flaggedRate, gateRate := float64(flagged)/float64(benches), float64(gates)/trials
		unpairedRate := float64(gatesUnpaired) / trials
		t.Logf("%s: verdicts not no_change %.1f%%, gates failed %.1f%% (uncorrected %.1f%%; unpaired, clustered %.1f%%)",
			su.name, 100*flaggedRate, 100*gateRate, 100*float64(gatesNone)/trials, 100*unpairedRate)
		assert.LessOrEqual(t, flaggedRate, 0.07, su.name)
		assert.LessOrEqual(t, gateRate, 0.10, su.name)
		assert.LessOrEqual(t, unpairedRate, 0.10, su.name)
		if su.benches == 20 {
			// Twenty tests at 5% each: a gate of about 1 − 0.975^20 = 40% (regressions
			// only), which is what the simulation must be noisy enough to show.
			assert.Greater(t, float64(gatesNone)/trials, 0.2, su.name)
		}
	}

	su := simSetup{name: "20x100x4, bench00 drops 0.15", benches: 20, tasks: 100, rollouts: 4, drop: 0.15}
	found, others := 0, 0
	for range trials {
		a, b := simSides(t, rng, su)
		r := compareSides(a, b, holmOpts)
		if r.Benchmarks[simBench(0)].Verdict == verdictRegression && gate(r) == 1 {
			found++
		}
		for name, c := range r.Benchmarks {
			if name != simBench(0) && c.Verdict != verdictNoChange {
				others++
			}
		}
	}
	t.Logf("%s: found in %.1f%% of trials; other benchmarks' verdicts not no_change %.1f%%", su.name, 100*float64(found)/trials, 100*float64(others)/(19*trials))
	assert.GreaterOrEqual(t, float64(found)/trials, 0.8)
	assert.LessOrEqual(t, float64(others)/(19*trials), 0.07)
}
