// Package deploy holds the checks of the deployment recipes (kubernetes/, slurm/): a module of
// its own, so that the Kubernetes API types are no dependency of the collector.
package deploy

//go:generate go run ./cmd/kpsgen
//go:generate go run ./cmd/helmgen
