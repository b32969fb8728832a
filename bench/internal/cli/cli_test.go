package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestInts(t *testing.T) {
	got, err := Ints("1, 2,64")
	if err != nil || !slices.Equal(got, []int{1, 2, 64}) {
		t.Fatalf("Ints(\"1, 2,64\") = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "x"} {
		if got, err := Ints(bad); err == nil {
			t.Errorf("Ints(%q) = %v, want an error", bad, got)
		}
	}
}

func TestStreamArgs(t *testing.T) {
	s := Stream{Events: 3_000_000, Processes: 64, Batch: 1000, Seed: 7}
	want := []string{"--events", "3000000", "--processes", "64", "--batch", "1000", "--seed", "7"}
	if got := s.Args(); !slices.Equal(got, want) {
		t.Fatalf("Args() = %v, want %v", got, want)
	}
}

func TestReady(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	old := filepath.Join(out, "old")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Ready(out, false, "build", bin); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("not fresh: %s removed: %v", old, err)
	}
	if err := Ready(out, true, "build", bin); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("fresh: %s still there (%v)", old, err)
	}
	if err := Ready(out, false, "build", filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing binary: no error")
	}
}
