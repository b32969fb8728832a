//go:build !linux && !darwin

package main

import (
	"io"
	"os"
)

// terminal: top draws frames on Linux and macOS only; elsewhere it prints one.
type terminal struct{}

func openTerminal(*os.File) (*terminal, error) { return nil, errNoTerminal }
func (*terminal) restore(io.Writer)            {}
func (*terminal) readKeys(chan<- byte)         {}
func (*terminal) draw(io.Writer, frame)        {}
