// Package layout holds no code: its test checks the import rules of the repository's packages
// (docs/architecture.md), so that the walls between the engine and the components cannot rot.
package layout
